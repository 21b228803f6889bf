// Protection domains, memory regions, completion queues and channels, address handles and
// shared receive queues.
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/engine.hpp"
#include "hosttrace/softverbs/export.hpp"
#include "hosttrace/softverbs/ops.hpp"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace insert::softverbs;

namespace {

constexpr unsigned kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                      IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE;

ibv_mr* register_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
    // IBTA: remote write or atomic access requires local write.
    if ((access & ~kSupportedAccess) ||
        ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(access & IBV_ACCESS_LOCAL_WRITE)) ||
        length > kMaxMrSize || (!addr && length)) {
        errno = EINVAL;
        return nullptr;
    }
    Context& ctx = *to_ctx(pd->context);
    auto* mr = new (std::nothrow) Mr;
    if (!mr) {
        errno = ENOMEM;
        return nullptr;
    }
    std::lock_guard guard(ctx.lock);
    uint32_t slot = 0;
    for (uint32_t i = 0; i < kMaxMrs - 1 && !slot; ++i) {
        const uint32_t s = 1 + (ctx.mr_next_slot - 1 + i) % (kMaxMrs - 1);
        if (!ctx.mrs[s]) slot = s;
    }
    if (!slot) {
        delete mr;
        errno = ENOMEM;
        return nullptr;
    }
    ctx.mr_next_slot = slot + 1;
    // The low byte changes on every registration, so a stale key to a reused slot fails.
    const uint32_t key = (slot << 8) | ctx.mr_tag++;
    mr->mr.context = pd->context;
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = slot;
    mr->mr.lkey = key;
    mr->mr.rkey = key;
    mr->iova = iova;
    mr->access = access;
    ctx.mrs[slot] = mr;
    return &mr->mr;
}

}  // namespace

SV_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
    auto* pd = new (std::nothrow) Pd;
    if (!pd) {
        errno = ENOMEM;
        return nullptr;
    }
    pd->pd.context = context;
    static std::atomic<uint32_t> next_handle{1};
    pd->pd.handle = next_handle++;
    return &pd->pd;
}

SV_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
    delete to_pd(pd);
    return 0;
}

SV_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return register_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                       static_cast<unsigned>(access));
}

SV_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                  int access) {
    return register_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

SV_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                   unsigned int access) {
    return register_mr(pd, addr, length, iova, access);
}

SV_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    errno = EOPNOTSUPP;  // no device memory to import from
    return nullptr;
}

SV_EXPORT int ibv_dereg_mr(ibv_mr* handle) {
    Context& ctx = *to_ctx(handle->context);
    {
        std::lock_guard guard(ctx.lock);
        ctx.mrs[handle->handle] = nullptr;
    }
    delete to_mr(handle);
    return 0;
}

SV_EXPORT int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
    return EOPNOTSUPP;  // IBV_REREG_MR_ERR_INPUT semantics: nothing changed
}

SV_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
    auto* ch = new (std::nothrow) CompChannel;
    if (!ch) {
        close(fds[0]);
        close(fds[1]);
        errno = ENOMEM;
        return nullptr;
    }
    ch->ch.context = context;
    ch->ch.fd = fds[0];
    ch->ch.refcnt = 0;
    ch->write_fd = fds[1];
    return &ch->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    if (channel->refcnt) return EBUSY;
    CompChannel* ch = to_channel(channel);
    close(ch->ch.fd);
    close(ch->write_fd);
    delete ch;
    return 0;
}

SV_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                ibv_comp_channel* channel, int comp_vector) {
    if (cqe < 1 || static_cast<uint32_t>(cqe) > kMaxCqe || comp_vector != 0) {
        errno = EINVAL;
        return nullptr;
    }
    auto* cq = new (std::nothrow) Cq;
    if (!cq) {
        errno = ENOMEM;
        return nullptr;
    }
    cq->cq.context = context;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.cqe = cqe;
    pthread_mutex_init(&cq->cq.mutex, nullptr);
    pthread_cond_init(&cq->cq.cond, nullptr);
    cq->entries.reset(static_cast<std::size_t>(cqe));
    if (channel) ++channel->refcnt;
    return &cq->cq;
}

SV_EXPORT int ibv_resize_cq(ibv_cq* handle, int cqe) {
    Cq* cq = to_cq(handle);
    std::lock_guard guard(cq->lock);
    if (cqe < 1 || static_cast<uint32_t>(cqe) > kMaxCqe ||
        static_cast<std::size_t>(cqe) < cq->entries.size())
        return EINVAL;
    Ring<ibv_wc> bigger;
    bigger.reset(static_cast<std::size_t>(cqe));
    while (!cq->entries.empty()) {
        *bigger.push() = cq->entries.front();
        cq->entries.pop();
    }
    cq->entries = std::move(bigger);
    handle->cqe = cqe;
    return 0;
}

SV_EXPORT int ibv_destroy_cq(ibv_cq* handle) {
    Cq* cq = to_cq(handle);
    Context& ctx = *to_ctx(handle->context);
    {
        std::lock_guard guard(ctx.lock);
        for (Qp* qp : ctx.live_qps)
            if (qp->send_cq == cq || qp->recv_cq == cq) return EBUSY;
    }
    if (handle->channel) --handle->channel->refcnt;
    pthread_mutex_destroy(&handle->mutex);
    pthread_cond_destroy(&handle->cond);
    delete cq;
    return 0;
}

SV_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    ibv_cq* handle = nullptr;
    const ssize_t n = read(channel->fd, &handle, sizeof(handle));
    if (n != sizeof(handle)) return -1;
    *cq = handle;
    *cq_context = handle->cq_context;
    return 0;
}

SV_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

SV_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    // RoCEv2 addresses by GID: an IPv4-mapped GID gives the destination IP.
    const uint8_t* g = attr->grh.dgid.raw;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (!attr->is_global || std::memcmp(g, kMapped, 12) != 0) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ah = new (std::nothrow) Ah;
    if (!ah) {
        errno = ENOMEM;
        return nullptr;
    }
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->ipv4 = (uint32_t{g[12]} << 24) | (uint32_t{g[13]} << 16) | (uint32_t{g[14]} << 8) | g[15];
    return &ah->ah;
}

SV_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
    delete to_ah(ah);
    return 0;
}

SV_EXPORT int ibv_init_ah_from_wc(ibv_context*, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                  ibv_ah_attr* ah_attr) {
    if (!(wc->wc_flags & IBV_WC_GRH)) return -1;
    std::memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->is_global = 1;
    ah_attr->port_num = port_num;
    ah_attr->grh.hop_limit = 0xFF;
    // RoCEv2/IPv4: the IPv4 header sits in the last 20 bytes of the 40-byte GRH area.
    const uint8_t* ip = reinterpret_cast<const uint8_t*>(grh) + 20;
    uint8_t* d = ah_attr->grh.dgid.raw;
    d[10] = d[11] = 0xFF;
    std::memcpy(d + 12, ip + 12, 4);  // reply to the sender
    return 0;
}

SV_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) return nullptr;
    return ibv_create_ah(pd, &attr);
}

SV_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    if (attr->attr.max_wr < 1 || attr->attr.max_wr > kMaxQpWr || attr->attr.max_sge > kMaxRecvSge) {
        errno = EINVAL;
        return nullptr;
    }
    auto* srq = new (std::nothrow) Srq;
    if (!srq) {
        errno = ENOMEM;
        return nullptr;
    }
    srq->srq.context = pd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd = pd;
    pthread_mutex_init(&srq->srq.mutex, nullptr);
    pthread_cond_init(&srq->srq.cond, nullptr);
    srq->rq.reset(attr->attr.max_wr);
    srq->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
    return &srq->srq;
}

SV_EXPORT int ibv_modify_srq(ibv_srq* handle, ibv_srq_attr* attr, int mask) {
    // SRQ limit events are not generated; resizing keeps posted WQEs.
    if (mask & IBV_SRQ_MAX_WR) {
        Srq* srq = to_srq(handle);
        Context& ctx = *to_ctx(handle->context);
        std::lock_guard guard(ctx.lock);
        if (attr->max_wr < srq->rq.size() || attr->max_wr > kMaxQpWr) return EINVAL;
        Ring<RecvWqe> bigger;
        bigger.reset(attr->max_wr);
        while (!srq->rq.empty()) {
            *bigger.push() = srq->rq.front();
            srq->rq.pop();
        }
        srq->rq = std::move(bigger);
    }
    return 0;
}

SV_EXPORT int ibv_query_srq(ibv_srq* handle, ibv_srq_attr* attr) {
    Srq* srq = to_srq(handle);
    attr->max_wr = static_cast<uint32_t>(srq->rq.capacity());
    attr->max_sge = srq->max_sge;
    attr->srq_limit = 0;
    return 0;
}

SV_EXPORT int ibv_destroy_srq(ibv_srq* handle) {
    Context& ctx = *to_ctx(handle->context);
    {
        std::lock_guard guard(ctx.lock);
        for (Qp* qp : ctx.live_qps)
            if (qp->srq == to_srq(handle)) return EBUSY;
    }
    pthread_mutex_destroy(&handle->mutex);
    pthread_cond_destroy(&handle->cond);
    delete to_srq(handle);
    return 0;
}
