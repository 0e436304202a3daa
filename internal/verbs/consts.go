package verbs

// Constants from infiniband/verbs.h and rdma/rdma_cma.h. layout_test.go
// asserts each against the headers.

// enum ibv_wr_opcode
const (
	WRRDMAWrite        = 0 // IBV_WR_RDMA_WRITE
	WRRDMAWriteWithImm = 1 // IBV_WR_RDMA_WRITE_WITH_IMM
	WRSend             = 2 // IBV_WR_SEND
)

// enum ibv_send_flags
const (
	SendFence    = 1 << 0 // IBV_SEND_FENCE
	SendSignaled = 1 << 1 // IBV_SEND_SIGNALED
	SendInline   = 1 << 3 // IBV_SEND_INLINE
)

// enum ibv_wc_opcode
const (
	WCSend            = 0      // IBV_WC_SEND
	WCRDMAWrite       = 1      // IBV_WC_RDMA_WRITE
	WCRecv            = 128    // IBV_WC_RECV
	WCRecvRDMAWithImm = 129    // IBV_WC_RECV_RDMA_WITH_IMM
	WCSuccess         = 0      // IBV_WC_SUCCESS (enum ibv_wc_status)
	WCLocLenErr       = 1      // IBV_WC_LOC_LEN_ERR
	WCWRFlushErr      = 5      // IBV_WC_WR_FLUSH_ERR
	WCRetryExcErr     = 12     // IBV_WC_RETRY_EXC_ERR
	WCRNRRetryExcErr  = 13     // IBV_WC_RNR_RETRY_EXC_ERR
	WCRemAbortErr     = 16     // IBV_WC_REM_ABORT_ERR
	WCWithImm         = 1 << 1 // IBV_WC_WITH_IMM (enum ibv_wc_flags)
)

// enum ibv_access_flags
const (
	AccessLocalWrite  = 1 << 0 // IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite = 1 << 1 // IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead  = 1 << 2 // IBV_ACCESS_REMOTE_READ
)

// enum ibv_qp_state
const (
	QPStateInit = 1 // IBV_QPS_INIT
	QPStateRTR  = 2 // IBV_QPS_RTR
	QPStateRTS  = 3 // IBV_QPS_RTS
	QPStateSQD  = 4 // IBV_QPS_SQD
	QPStateErr  = 6 // IBV_QPS_ERR
)

// enum ibv_qp_attr_mask
const (
	QPAttrState    = 1 << 0  // IBV_QP_STATE
	QPAttrRNRRetry = 1 << 11 // IBV_QP_RNR_RETRY
)

// enum ibv_transport_type
const (
	TransportIB    = 0 // IBV_TRANSPORT_IB
	TransportIWARP = 1 // IBV_TRANSPORT_IWARP
)

// enum ibv_qp_type, enum ibv_port_state, enum ibv_node_type, link layers
const (
	QPTypeRC = 2 // IBV_QPT_RC

	PortDown   = 1 // IBV_PORT_DOWN
	PortInit   = 2 // IBV_PORT_INIT
	PortArmed  = 3 // IBV_PORT_ARMED
	PortActive = 4 // IBV_PORT_ACTIVE

	LinkLayerUnspecified = 0 // IBV_LINK_LAYER_UNSPECIFIED
	LinkLayerInfiniBand  = 1 // IBV_LINK_LAYER_INFINIBAND
	LinkLayerEthernet    = 2 // IBV_LINK_LAYER_ETHERNET
)

// enum rdma_port_space, rdma_getaddrinfo flags, rdma_set_option levels
const (
	PSTCP = 0x0106 // RDMA_PS_TCP

	RAIPassive     = 1 << 0 // RAI_PASSIVE
	RAINumericHost = 1 << 1 // RAI_NUMERICHOST

	OptionID          = 0 // RDMA_OPTION_ID
	OptionIDTOS       = 0 // RDMA_OPTION_ID_TOS
	OptionIDReuseAddr = 1 // RDMA_OPTION_ID_REUSEADDR
	OptionIDAFOnly    = 2 // RDMA_OPTION_ID_AFONLY
)

// enum rdma_cm_event_type
const (
	EventAddrResolved    = 0  // RDMA_CM_EVENT_ADDR_RESOLVED
	EventAddrError       = 1  // RDMA_CM_EVENT_ADDR_ERROR
	EventRouteResolved   = 2  // RDMA_CM_EVENT_ROUTE_RESOLVED
	EventRouteError      = 3  // RDMA_CM_EVENT_ROUTE_ERROR
	EventConnectRequest  = 4  // RDMA_CM_EVENT_CONNECT_REQUEST
	EventConnectResponse = 5  // RDMA_CM_EVENT_CONNECT_RESPONSE
	EventConnectError    = 6  // RDMA_CM_EVENT_CONNECT_ERROR
	EventUnreachable     = 7  // RDMA_CM_EVENT_UNREACHABLE
	EventRejected        = 8  // RDMA_CM_EVENT_REJECTED
	EventEstablished     = 9  // RDMA_CM_EVENT_ESTABLISHED
	EventDisconnected    = 10 // RDMA_CM_EVENT_DISCONNECTED
	EventDeviceRemoval   = 11 // RDMA_CM_EVENT_DEVICE_REMOVAL
	EventAddrChange      = 14 // RDMA_CM_EVENT_ADDR_CHANGE
	EventTimewaitExit    = 15 // RDMA_CM_EVENT_TIMEWAIT_EXIT
)
