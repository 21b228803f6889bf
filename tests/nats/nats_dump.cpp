// The tests' consumer of the producers' stream (docs/scale-out.md): every message of a
// JetStream stream, in stream order, as one JSON line each - {"seq", "subject", "headers",
// "data"} - read one by one with the JetStream API's message get (no consumer is created,
// so the stream is left as it was). Also `--info`: the stream's configuration as JSON; and
// `--consumer NAME`: a consumer's state as JSON (what it has still to deliver, what waits
// for an acknowledgement, its acknowledgement floor) - how a test sees a correlator done.
//
//   nats_dump nats://127.0.0.1:4222 STREAM [--info | --consumer NAME]
// Exit 0, 1 on any error (one line on stderr), 3 when the stream or consumer does not exist.
#include <nats/nats.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

namespace {

int fail(const char* what, natsStatus s) {
    std::fprintf(stderr, "nats_dump: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
}

nlohmann::json headers_of(natsMsg* m) {
    nlohmann::json h = nlohmann::json::object();
    const char** keys = nullptr;
    int count = 0;
    if (natsMsgHeader_Keys(m, &keys, &count) != NATS_OK) return h;
    for (int i = 0; i < count; ++i) {
        const char* value = nullptr;
        if (natsMsgHeader_Get(m, keys[i], &value) == NATS_OK && value) h[keys[i]] = value;
    }
    free(static_cast<void*>(keys));
    return h;
}

int consumer(jsCtx* js, const char* stream, const char* name) {
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetConsumerInfo(&ci, js, stream, name, nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
        std::fprintf(stderr, "nats_dump: no consumer %s on %s\n", name, stream);
        return 3;
    }
    if (s != NATS_OK) return fail("consumer info", s);
    nlohmann::json j;
    j["name"] = ci->Name;
    j["filter_subject"] = ci->Config && ci->Config->FilterSubject ? ci->Config->FilterSubject : "";
    j["durable"] = ci->Config && ci->Config->Durable ? ci->Config->Durable : "";
    j["ack_explicit"] = ci->Config && ci->Config->AckPolicy == js_AckExplicit;
    j["num_pending"] = ci->NumPending;
    j["num_ack_pending"] = ci->NumAckPending;
    j["num_redelivered"] = ci->NumRedelivered;
    j["delivered_stream_seq"] = ci->Delivered.Stream;
    j["ack_floor_stream_seq"] = ci->AckFloor.Stream;
    std::printf("%s\n", j.dump().c_str());
    jsConsumerInfo_Destroy(ci);
    return 0;
}

int dump(jsCtx* js, const char* stream, bool info) {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&si, js, stream, nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
        std::fprintf(stderr, "nats_dump: no stream %s\n", stream);
        return 3;
    }
    if (s != NATS_OK) return fail("stream info", s);
    if (info) {
        const jsStreamConfig* c = si->Config;
        nlohmann::json j;
        j["name"] = c->Name;
        j["description"] = c->Description ? c->Description : "";
        j["subjects"] = nlohmann::json::array();
        for (int i = 0; i < c->SubjectsLen; ++i) j["subjects"].push_back(c->Subjects[i]);
        j["storage"] = c->Storage == js_FileStorage ? "file" : "memory";
        j["replicas"] = c->Replicas;
        j["duplicates_ns"] = c->Duplicates;
        j["msgs"] = si->State.Msgs;
        std::printf("%s\n", j.dump().c_str());
        jsStreamInfo_Destroy(si);
        return 0;
    }
    const uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    for (uint64_t seq = first; seq != 0 && seq <= last; ++seq) {
        natsMsg* m = nullptr;
        s = js_GetMsg(&m, js, stream, seq, nullptr, &jerr);
        if (s == NATS_NOT_FOUND) continue;  // deleted
        if (s != NATS_OK) return fail("get message", s);
        nlohmann::json j;
        j["seq"] = seq;
        j["subject"] = natsMsg_GetSubject(m);
        j["headers"] = headers_of(m);
        j["data"] =
            std::string(natsMsg_GetData(m), static_cast<std::size_t>(natsMsg_GetDataLength(m)));
        std::printf("%s\n", j.dump().c_str());
        natsMsg_Destroy(m);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const bool info = argc == 4 && std::strcmp(argv[3], "--info") == 0;
    const bool of_consumer = argc == 5 && std::strcmp(argv[3], "--consumer") == 0;
    if (argc < 3 || argc > 5 || (argc >= 4 && !info && !of_consumer)) {
        std::fprintf(stderr,
                     "usage: nats_dump nats://HOST:PORT STREAM [--info | --consumer NAME]\n");
        return 1;
    }
    natsConnection* nc = nullptr;
    natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
    if (s != NATS_OK) return fail("connect", s);
    jsCtx* js = nullptr;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    s = natsConnection_JetStream(&js, nc, &jo);
    const int rc = s != NATS_OK  ? fail("JetStream", s)
                   : of_consumer ? consumer(js, argv[2], argv[4])
                                 : dump(js, argv[2], info);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
