// The tests' producer of records it did not make (docs/scale-out.md): a JSON Lines file -
// insert-gen's host traces, which insert-trace cannot replay - published to the bus exactly
// as the producers publish theirs (NatsPublisher: routed by the partition rule, batched,
// with their headers and acknowledgements), under a producer identity of the test's own;
// or one hand-made message (--raw) with the headers given, for what no producer sends.
//
//   nats_publish URL FILE --producer ID [--subject P] [--partitions N] [--hosts FILE]
//   nats_publish URL --raw SUBJECT [--header KEY=VALUE]... [--data TEXT]
// Exit 0 when everything was acknowledged by the stream, 1 otherwise, 2 on bad arguments.
#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/common/nats_publisher.hpp"

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: nats_publish URL FILE --producer ID [--subject P] [--partitions N] "
                 "[--hosts FILE]\n"
                 "       nats_publish URL --raw SUBJECT [--header KEY=VALUE]... [--data TEXT]\n");
    return 2;
}

int publish_file(const std::string& url, const std::string& path, insert::NatsConfig config) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "nats_publish: %s: cannot read\n", path.c_str());
        return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    config.servers = {url};
    config.wait_when_full = true;  // a file waits for the bus, as insert-dp replay's does
    config.label = "nats_publish: " + path;
    std::string error;
    auto publisher = insert::NatsPublisher::create(config, error);
    if (!publisher) {
        std::fprintf(stderr, "nats_publish: %s\n", error.c_str());
        return 1;
    }
    publisher->start();
    publisher->write(text.str());
    return publisher->finish(std::chrono::seconds(30)) ? 0 : 1;  // as insert-dp replay's end
}

int publish_raw(const std::string& url, const std::string& subject,
                const std::vector<std::pair<std::string, std::string>>& headers,
                const std::string& data) {
    natsConnection* nc = nullptr;
    natsStatus s = natsConnection_ConnectTo(&nc, url.c_str());
    jsCtx* js = nullptr;
    if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, nullptr);
    natsMsg* m = nullptr;
    if (s == NATS_OK)
        s = natsMsg_Create(&m, subject.c_str(), nullptr, data.data(),
                           static_cast<int>(data.size()));
    for (const auto& [key, value] : headers)
        if (s == NATS_OK) s = natsMsgHeader_Set(m, key.c_str(), value.c_str());
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (s == NATS_OK) s = js_PublishMsg(&ack, js, m, nullptr, &jerr);
    if (s != NATS_OK)
        std::fprintf(stderr, "nats_publish: %s: %s (JetStream error %d)\n", subject.c_str(),
                     natsStatus_GetText(s), static_cast<int>(jerr));
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return s == NATS_OK ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return usage();
    const std::string url = argv[1];
    std::string file, raw, data;
    std::vector<std::pair<std::string, std::string>> headers;
    insert::NatsConfig config;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--raw" && has_value) {
            raw = argv[++i];
        } else if (a == "--header" && has_value) {
            const std::string kv = argv[++i];
            const std::size_t eq = kv.find('=');
            if (eq == std::string::npos) return usage();
            headers.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else if (a == "--data" && has_value) {
            data = argv[++i];
        } else if (a == "--producer" && has_value) {
            config.producer = argv[++i];
        } else if (a == "--subject" && has_value) {
            config.prefix = argv[++i];
        } else if (a == "--partitions" && has_value) {
            config.partitions = static_cast<unsigned>(std::stoul(argv[++i]));
        } else if (a == "--hosts" && has_value) {
            config.hosts_file = argv[++i];
        } else if (file.empty() && a.rfind("--", 0) != 0) {
            file = a;
        } else {
            return usage();
        }
    }
    if (!raw.empty()) return publish_raw(url, raw, headers, data);
    if (file.empty() || config.producer.empty()) return usage();
    return publish_file(url, file, config);
}
