/* Stand-in for rdma-core's libefa.so.1 (see mlx5_standin.c for why): perftest binds these
 * two entry points at load time and calls them only for EFA devices. */
#include <errno.h>
#include <infiniband/efadv.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT struct ibv_qp* efadv_create_qp_ex(struct ibv_context* ibvctx,
                                         struct ibv_qp_init_attr_ex* attr_ex,
                                         struct efadv_qp_init_attr* efa_attr, uint32_t inlen) {
    (void)ibvctx;
    (void)attr_ex;
    (void)efa_attr;
    (void)inlen;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT int efadv_query_device(struct ibv_context* ibvctx, struct efadv_device_attr* attr,
                              uint32_t inlen) {
    (void)ibvctx;
    (void)attr;
    (void)inlen;
    return EOPNOTSUPP;
}
