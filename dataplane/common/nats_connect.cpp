#ifdef INSERT_HAVE_NATS

#include "dataplane/common/nats_connect.hpp"

#include "dataplane/common/nats_client.hpp"

namespace insert::nats_connect {

namespace {

int64_t reconnect_delay(natsConnection*, int attempts, void*) {
    return nats_client::backoff_ms(attempts);
}

}  // namespace

natsStatus client_options(natsOptions** out, const std::vector<std::string>& servers,
                          const std::string& name, bool retry_first,
                          natsConnectionHandler on_connected, natsConnectionHandler on_disconnected,
                          void* closure) {
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    std::vector<const char*> urls;
    for (const std::string& u : servers) urls.push_back(u.c_str());
    if (s == NATS_OK) s = natsOptions_SetServers(opts, urls.data(), static_cast<int>(urls.size()));
    if (s == NATS_OK) s = natsOptions_SetName(opts, name.c_str());
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);  // forever
    if (s == NATS_OK) s = natsOptions_SetCustomReconnectDelay(opts, reconnect_delay, nullptr);
    if (s == NATS_OK && retry_first)
        s = natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, closure);
    if (s == NATS_OK && on_connected) s = natsOptions_SetReconnectedCB(opts, on_connected, closure);
    if (s == NATS_OK && on_disconnected)
        s = natsOptions_SetDisconnectedCB(opts, on_disconnected, closure);
    if (s != NATS_OK && opts) {
        natsOptions_Destroy(opts);
        opts = nullptr;
    }
    *out = opts;
    return s;
}

std::string status_text(natsStatus s, jsErrCode jerr) {
    std::string text = natsStatus_GetText(s);
    natsStatus last = NATS_OK;
    const char* detail = nats_GetLastError(&last);
    if (detail && *detail && text.find(detail) == std::string::npos)
        text += std::string(": ") + detail;
    if (jerr) text += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
    return text;
}

}  // namespace insert::nats_connect

#endif  // INSERT_HAVE_NATS
