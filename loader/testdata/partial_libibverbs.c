/* A libibverbs look-alike for the loader tests: it exports every function the
 * loader resolves from libibverbs except ibv_wc_status_str, so loading it must
 * fail with a SymbolError naming that one symbol. The test checks that this
 * list matches the loader's table. */
#define STUB(name) void name(void) {}

STUB(ibv_get_device_list)
STUB(ibv_free_device_list)
STUB(ibv_get_device_name)
STUB(ibv_open_device)
STUB(ibv_close_device)
STUB(ibv_query_device)
STUB(ibv_query_port)
STUB(ibv_query_gid)
STUB(ibv_alloc_pd)
STUB(ibv_dealloc_pd)
STUB(ibv_create_comp_channel)
STUB(ibv_destroy_comp_channel)
STUB(ibv_create_cq)
STUB(ibv_destroy_cq)
STUB(ibv_reg_mr)
STUB(ibv_dereg_mr)
STUB(ibv_get_cq_event)
STUB(ibv_ack_cq_events)
STUB(ibv_create_qp)
STUB(ibv_modify_qp)
STUB(ibv_destroy_qp)
