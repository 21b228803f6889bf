// Devices and contexts: one virtual RoCEv2 device per local IPv4 address, opened into a
// context whose engine binds IP:4791.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/engine.hpp"
#include "hosttrace/softverbs/export.hpp"
#include "hosttrace/softverbs/ops.hpp"

// verbs.h turns this into an inline wrapper; the library defines the function itself.
#undef ibv_get_device_list

namespace insert::softverbs {

namespace {

// Devices live as long as the process: applications may keep ibv_device pointers after
// ibv_free_device_list() while a context is open, as with rdma-core.
struct Registry {
    std::mutex lock;
    std::vector<std::unique_ptr<Device>> devices;
};

Registry& registry() {
    static Registry r;
    return r;
}

struct Candidate {
    uint32_t ipv4;
    std::string ifname;
    bool loopback;
};

int interface_mtu(const std::string& ifname) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 1500;
    ifreq req{};
    std::snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", ifname.c_str());
    const int mtu = ioctl(fd, SIOCGIFMTU, &req) == 0 ? req.ifr_mtu : 1500;
    close(fd);
    return mtu;
}

std::vector<Candidate> local_addresses() {
    std::vector<Candidate> out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
        const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
        out.push_back(
            {ntohl(sin->sin_addr.s_addr), a->ifa_name, (a->ifa_flags & IFF_LOOPBACK) != 0});
    }
    freeifaddrs(list);
    // Real interfaces first, so "the first device" (perftest's default) is one that
    // reaches other hosts.
    std::stable_sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) {
        return !x.loopback && y.loopback;
    });
    return out;
}

// SOFTVERBS_IPS=a.b.c.d[,...] restricts the devices to these addresses, in this order
// (e.g. two processes on one host each take their own loopback address).
std::vector<Candidate> configured_addresses(const char* spec) {
    std::vector<Candidate> all = local_addresses();
    std::vector<Candidate> out;
    std::string s(spec);
    std::size_t pos = 0;
    while (pos <= s.size()) {
        const std::size_t comma = s.find(',', pos);
        const std::string item =
            s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? s.size() + 1 : comma + 1;
        in_addr a{};
        if (item.empty() || inet_pton(AF_INET, item.c_str(), &a) != 1) continue;
        Candidate c{ntohl(a.s_addr), "", (ntohl(a.s_addr) >> 24) == 127};
        for (const Candidate& l : all)
            if (l.ipv4 == c.ipv4) c.ifname = l.ifname;
        if (c.ifname.empty() && c.loopback) c.ifname = "lo";
        out.push_back(c);
    }
    return out;
}

Device* device_for(const Candidate& c, int index) {
    Registry& r = registry();
    for (auto& d : r.devices)
        if (d->ipv4 == c.ipv4) return d.get();
    auto d = std::make_unique<Device>();
    d->ipv4 = c.ipv4;
    std::snprintf(d->ifname, sizeof(d->ifname), "%s", c.ifname.c_str());
    d->if_mtu = c.ifname.empty() ? 1500 : interface_mtu(c.ifname);
    d->ifindex = c.ifname.empty() ? 0 : static_cast<int>(if_nametoindex(c.ifname.c_str()));
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d->dev.name, sizeof(d->dev.name), "softverbs%d", index);
    std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", index);
    std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
                  index);
    std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/softverbs%d",
                  index);
    r.devices.push_back(std::move(d));
    return r.devices.back().get();
}

uint32_t random_u32() {
    uint32_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != sizeof(v)) v = static_cast<uint32_t>(getpid()) * 2654435761u;
    return v;
}

}  // namespace

}  // namespace insert::softverbs

using namespace insert::softverbs;

SV_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
    const char* spec = std::getenv("SOFTVERBS_IPS");
    const std::vector<Candidate> cands =
        spec && *spec ? configured_addresses(spec) : local_addresses();
    Registry& r = registry();
    std::lock_guard guard(r.lock);
    auto** list = static_cast<ibv_device**>(std::calloc(cands.size() + 1, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    int n = 0;
    for (const Candidate& c : cands) {
        Device* d = device_for(c, static_cast<int>(r.devices.size()));
        bool dup = false;
        for (int i = 0; i < n; ++i) dup |= list[i] == &d->dev;
        if (!dup) list[n++] = &d->dev;
    }
    if (num_devices) *num_devices = n;
    return list;
}

SV_EXPORT void ibv_free_device_list(ibv_device** list) {
    std::free(list);
}

SV_EXPORT const char* ibv_get_device_name(ibv_device* device) {
    return device->name;
}

SV_EXPORT int ibv_get_device_index(ibv_device* device) {
    Registry& r = registry();
    std::lock_guard guard(r.lock);
    for (std::size_t i = 0; i < r.devices.size(); ++i)
        if (&r.devices[i]->dev == device) return static_cast<int>(i);
    return -1;
}

SV_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
    return htobe64(node_guid(*to_device(device)));
}

SV_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
    auto ctx = std::make_unique<Context>();
    ctx->device = to_device(device);
    std::string error;
    if (!load_config(ctx->config, error)) {
        std::fprintf(stderr, "softverbs: %s\n", error.c_str());
        errno = EINVAL;
        return nullptr;
    }
    // QPNs differ between contexts and runs, as on hardware; never 0 or 1 (QP0/QP1).
    ctx->qpn_base = 0x100 + (random_u32() % 0xF00) * kMaxQps;
    ctx->mr_tag = static_cast<uint8_t>(random_u32());
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
    ctx->async_read_fd = fds[0];
    ctx->async_write_fd = fds[1];
    fcntl(fds[1], F_SETFL, O_NONBLOCK);

    ibv_context& c = ctx->vctx.context;
    c.device = device;
    c.cmd_fd = -1;
    c.async_fd = ctx->async_read_fd;
    c.num_comp_vectors = 1;
    pthread_mutex_init(&c.mutex, nullptr);
    c.abi_compat = __VERBS_ABI_IS_EXTENDED;
    ctx->vctx.sz = sizeof(verbs_context);
    fill_ops(*ctx);

    ctx->engine = std::make_unique<Engine>(*ctx);
    const int rc = ctx->engine->start(error);
    if (rc != 0) {
        std::fprintf(stderr, "softverbs: %s: %s\n", device->name, error.c_str());
        close(ctx->async_read_fd);
        close(ctx->async_write_fd);
        errno = rc;
        return nullptr;
    }
    if (ctx->config.debug) {
        char ip[INET_ADDRSTRLEN];
        const in_addr a{htonl(ctx->device->ipv4)};
        inet_ntop(AF_INET, &a, ip, sizeof(ip));
        std::fprintf(stderr, "softverbs %s: %s:4791 (%s, MTU %d), QPN base 0x%x\n", device->name,
                     ip, ctx->device->ifname, ctx->device->if_mtu, ctx->qpn_base);
    }
    return &ctx.release()->vctx.context;
}

SV_EXPORT int ibv_close_device(ibv_context* context) {
    Context* ctx = to_ctx(context);
    ctx->engine->stop();
    ctx->engine.reset();
    close(ctx->async_read_fd);
    close(ctx->async_write_fd);
    pthread_mutex_destroy(&context->mutex);
    delete ctx;
    return 0;
}

SV_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    const ssize_t n = read(context->async_fd, event, sizeof(*event));
    return n == sizeof(*event) ? 0 : -1;
}

SV_EXPORT void ibv_ack_async_event(ibv_async_event*) {}
