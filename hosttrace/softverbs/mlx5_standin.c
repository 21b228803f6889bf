/* Stand-in for rdma-core's libmlx5.so.1. perftest links it and binds these symbols at
 * load time (BIND_NOW), but only calls them for mlx5 devices; softverbs devices are not,
 * so every entry point reports "not supported" (EOPNOTSUPP) the way mlx5 does for a
 * device it does not drive. The real library cannot be used: it needs libibverbs'
 * private IBVERBS_PRIVATE_34 interface, which softverbs does not implement. */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdbool.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT bool mlx5dv_is_supported(struct ibv_device* device) {
    (void)device;
    return false;
}

EXPORT struct ibv_context* mlx5dv_open_device(struct ibv_device* device,
                                              struct mlx5dv_context_attr* attr) {
    (void)device;
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT struct ibv_qp* mlx5dv_create_qp(struct ibv_context* context,
                                       struct ibv_qp_init_attr_ex* qp_attr,
                                       struct mlx5dv_qp_init_attr* mlx5_qp_attr) {
    (void)context;
    (void)qp_attr;
    (void)mlx5_qp_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT struct mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex* qp) {
    (void)qp;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT struct mlx5dv_mkey* mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr* attr) {
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT int mlx5dv_destroy_mkey(struct mlx5dv_mkey* mkey) {
    (void)mkey;
    return EOPNOTSUPP;
}

EXPORT int mlx5dv_devx_general_cmd(struct ibv_context* context, const void* in, size_t inlen,
                                   void* out, size_t outlen) {
    (void)context;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    return EOPNOTSUPP;
}

EXPORT int mlx5dv_crypto_login(struct ibv_context* context,
                               struct mlx5dv_crypto_login_attr* login_attr) {
    (void)context;
    (void)login_attr;
    return EOPNOTSUPP;
}

EXPORT struct mlx5dv_dek* mlx5dv_dek_create(struct ibv_context* context,
                                            struct mlx5dv_dek_init_attr* init_attr) {
    (void)context;
    (void)init_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

EXPORT int mlx5dv_dek_destroy(struct mlx5dv_dek* dek) {
    (void)dek;
    return EOPNOTSUPP;
}
