package verbs

import (
	"structs"
	"unsafe"
)

// Go mirrors of the C structs that rdmapool reads or writes. Each field's `c`
// tag names the C member it mirrors (a dotted path for members of nested
// structs and unions); layout_test.go generates a C file that asserts every
// offset, and the size of every type marked full in its table, and compiles it
// against the installed rdma-core headers. Blank fields are padding or members
// rdmapool never touches.
//
// Types marked "prefix" mirror only the leading members of a C struct that the
// libraries allocate (their tails hold pthread types whose sizes differ between
// architectures); rdmapool never allocates them.

// SGE mirrors struct ibv_sge.
type SGE struct {
	_      structs.HostLayout
	Addr   uint64 `c:"addr"`
	Length uint32 `c:"length"`
	LKey   uint32 `c:"lkey"`
}

// SendWR mirrors struct ibv_send_wr; only the RDMA member of the wr union is
// named.
type SendWR struct {
	_          structs.HostLayout
	WRID       uint64      `c:"wr_id"`
	Next       Ptr[SendWR] `c:"next"`
	SGList     Ptr[SGE]    `c:"sg_list"`
	NumSGE     int32       `c:"num_sge"`
	Opcode     uint32      `c:"opcode"`
	SendFlags  uint32      `c:"send_flags"`
	ImmData    uint32      `c:"imm_data"` // network byte order, as in C
	RemoteAddr uint64      `c:"wr.rdma.remote_addr"`
	RKey       uint32      `c:"wr.rdma.rkey"`
	_          [76]byte
}

// RecvWR mirrors struct ibv_recv_wr.
type RecvWR struct {
	_      structs.HostLayout
	WRID   uint64      `c:"wr_id"`
	Next   Ptr[RecvWR] `c:"next"`
	SGList Ptr[SGE]    `c:"sg_list"`
	NumSGE int32       `c:"num_sge"`
	_      [4]byte
}

// WC mirrors struct ibv_wc.
type WC struct {
	_            structs.HostLayout
	WRID         uint64 `c:"wr_id"`
	Status       uint32 `c:"status"`
	Opcode       uint32 `c:"opcode"`
	VendorErr    uint32 `c:"vendor_err"`
	ByteLen      uint32 `c:"byte_len"`
	ImmData      uint32 `c:"imm_data"` // network byte order, as in C
	QPNum        uint32 `c:"qp_num"`
	SrcQP        uint32 `c:"src_qp"`
	WCFlags      uint32 `c:"wc_flags"`
	PKeyIndex    uint16 `c:"pkey_index"`
	SLID         uint16 `c:"slid"`
	SL           uint8  `c:"sl"`
	DLIDPathBits uint8  `c:"dlid_path_bits"`
	_            [2]byte
}

// QPCap mirrors struct ibv_qp_cap.
type QPCap struct {
	_             structs.HostLayout
	MaxSendWR     uint32 `c:"max_send_wr"`
	MaxRecvWR     uint32 `c:"max_recv_wr"`
	MaxSendSGE    uint32 `c:"max_send_sge"`
	MaxRecvSGE    uint32 `c:"max_recv_sge"`
	MaxInlineData uint32 `c:"max_inline_data"`
}

// QPInitAttr mirrors struct ibv_qp_init_attr.
type QPInitAttr struct {
	_         structs.HostLayout
	QPContext uintptr `c:"qp_context"`
	SendCQ    Ptr[CQ] `c:"send_cq"`
	RecvCQ    Ptr[CQ] `c:"recv_cq"`
	SRQ       uintptr `c:"srq"`
	Cap       QPCap   `c:"cap"`
	QPType    uint32  `c:"qp_type"`
	SQSigAll  int32   `c:"sq_sig_all"`
	_         [4]byte
}

// QPAttr mirrors struct ibv_qp_attr, what ibv_modify_qp takes and
// rdma_init_qp_attr fills in; only the members rdmapool sets itself are
// named.
type QPAttr struct {
	_        structs.HostLayout
	_        [0]uint64 // 8-byte aligned in C, through ah_attr's union ibv_gid
	QPState  uint32    `c:"qp_state"`
	_        [128]byte // cur_qp_state to retry_cnt
	RNRRetry uint8     `c:"rnr_retry"`
	_        [11]byte  // alt_port_num, alt_timeout, rate_limit
}

// MR mirrors struct ibv_mr.
type MR struct {
	_       structs.HostLayout
	Context Ptr[Context] `c:"context"`
	PD      Ptr[PD]      `c:"pd"`
	Addr    uintptr      `c:"addr"`
	Length  uint64       `c:"length"`
	Handle  uint32       `c:"handle"`
	LKey    uint32       `c:"lkey"`
	RKey    uint32       `c:"rkey"`
	_       [4]byte
}

// PD mirrors struct ibv_pd.
type PD struct {
	_       structs.HostLayout
	Context Ptr[Context] `c:"context"`
	Handle  uint32       `c:"handle"`
	_       [4]byte
}

// EventChannel mirrors struct rdma_event_channel.
type EventChannel struct {
	_  structs.HostLayout
	FD int32 `c:"fd"`
}

// CompChannel mirrors struct ibv_comp_channel.
type CompChannel struct {
	_       structs.HostLayout
	Context Ptr[Context] `c:"context"`
	FD      int32        `c:"fd"`
	RefCnt  int32        `c:"refcnt"`
}

// CQ mirrors the leading members of struct ibv_cq (prefix).
type CQ struct {
	_         structs.HostLayout
	Context   Ptr[Context]     `c:"context"`
	Channel   Ptr[CompChannel] `c:"channel"`
	CQContext uintptr          `c:"cq_context"`
	Handle    uint32           `c:"handle"`
	CQE       int32            `c:"cqe"`
}

// QP mirrors the leading members of struct ibv_qp (prefix).
type QP struct {
	_         structs.HostLayout
	Context   Ptr[Context] `c:"context"`
	QPContext uintptr      `c:"qp_context"`
	PD        Ptr[PD]      `c:"pd"`
	SendCQ    Ptr[CQ]      `c:"send_cq"`
	RecvCQ    Ptr[CQ]      `c:"recv_cq"`
	SRQ       uintptr      `c:"srq"`
	Handle    uint32       `c:"handle"`
	QPNum     uint32       `c:"qp_num"`
	State     uint32       `c:"state"`
	QPType    uint32       `c:"qp_type"`
}

// ContextOps mirrors struct ibv_context_ops, the provider's function table
// through which the static inline verbs of verbs.h call. Only the four data-path
// entries are named.
type ContextOps struct {
	_           structs.HostLayout
	_           [11]uintptr
	PollCQ      uintptr `c:"poll_cq"`
	ReqNotifyCQ uintptr `c:"req_notify_cq"`
	_           [12]uintptr
	PostSend    uintptr `c:"post_send"`
	PostRecv    uintptr `c:"post_recv"`
	_           [5]uintptr
}

// Context mirrors the leading members of struct ibv_context (prefix).
type Context struct {
	_              structs.HostLayout
	Device         Ptr[Device] `c:"device"`
	Ops            ContextOps  `c:"ops"`
	CmdFD          int32       `c:"cmd_fd"`
	AsyncFD        int32       `c:"async_fd"`
	NumCompVectors int32       `c:"num_comp_vectors"`
}

// Device mirrors struct ibv_device.
type Device struct {
	_             structs.HostLayout
	_             [2]uintptr // _ops
	NodeType      int32      `c:"node_type"`
	TransportType int32      `c:"transport_type"`
	Name          [64]byte   `c:"name"`
	DevName       [64]byte   `c:"dev_name"`
	DevPath       [256]byte  `c:"dev_path"`
	IBDevPath     [256]byte  `c:"ibdev_path"`
}

// DeviceAttr mirrors struct ibv_device_attr.
type DeviceAttr struct {
	_                     structs.HostLayout
	FWVer                 [64]byte `c:"fw_ver"`
	NodeGUID              uint64   `c:"node_guid"` // network byte order
	SysImageGUID          uint64   `c:"sys_image_guid"`
	MaxMRSize             uint64   `c:"max_mr_size"`
	PageSizeCap           uint64   `c:"page_size_cap"`
	VendorID              uint32   `c:"vendor_id"`
	VendorPartID          uint32   `c:"vendor_part_id"`
	HWVer                 uint32   `c:"hw_ver"`
	MaxQP                 int32    `c:"max_qp"`
	MaxQPWR               int32    `c:"max_qp_wr"`
	DeviceCapFlags        uint32   `c:"device_cap_flags"`
	MaxSGE                int32    `c:"max_sge"`
	MaxSGERD              int32    `c:"max_sge_rd"`
	MaxCQ                 int32    `c:"max_cq"`
	MaxCQE                int32    `c:"max_cqe"`
	MaxMR                 int32    `c:"max_mr"`
	MaxPD                 int32    `c:"max_pd"`
	MaxQPRDAtom           int32    `c:"max_qp_rd_atom"`
	MaxEERDAtom           int32    `c:"max_ee_rd_atom"`
	MaxResRDAtom          int32    `c:"max_res_rd_atom"`
	MaxQPInitRDAtom       int32    `c:"max_qp_init_rd_atom"`
	MaxEEInitRDAtom       int32    `c:"max_ee_init_rd_atom"`
	AtomicCap             uint32   `c:"atomic_cap"`
	MaxEE                 int32    `c:"max_ee"`
	MaxRDD                int32    `c:"max_rdd"`
	MaxMW                 int32    `c:"max_mw"`
	MaxRawIPv6QP          int32    `c:"max_raw_ipv6_qp"`
	MaxRawEthyQP          int32    `c:"max_raw_ethy_qp"`
	MaxMcastGrp           int32    `c:"max_mcast_grp"`
	MaxMcastQPAttach      int32    `c:"max_mcast_qp_attach"`
	MaxTotalMcastQPAttach int32    `c:"max_total_mcast_qp_attach"`
	MaxAH                 int32    `c:"max_ah"`
	MaxFMR                int32    `c:"max_fmr"`
	MaxMapPerFMR          int32    `c:"max_map_per_fmr"`
	MaxSRQ                int32    `c:"max_srq"`
	MaxSRQWR              int32    `c:"max_srq_wr"`
	MaxSRQSGE             int32    `c:"max_srq_sge"`
	MaxPKeys              uint16   `c:"max_pkeys"`
	LocalCAAckDelay       uint8    `c:"local_ca_ack_delay"`
	PhysPortCnt           uint8    `c:"phys_port_cnt"`
	_                     [4]byte
}

// PortAttr mirrors struct ibv_port_attr.
type PortAttr struct {
	_             structs.HostLayout
	State         uint32 `c:"state"`
	MaxMTU        uint32 `c:"max_mtu"`
	ActiveMTU     uint32 `c:"active_mtu"`
	GIDTblLen     int32  `c:"gid_tbl_len"`
	PortCapFlags  uint32 `c:"port_cap_flags"`
	MaxMsgSz      uint32 `c:"max_msg_sz"`
	BadPKeyCntr   uint32 `c:"bad_pkey_cntr"`
	QKeyViolCntr  uint32 `c:"qkey_viol_cntr"`
	PKeyTblLen    uint16 `c:"pkey_tbl_len"`
	LID           uint16 `c:"lid"`
	SMLID         uint16 `c:"sm_lid"`
	LMC           uint8  `c:"lmc"`
	MaxVLNum      uint8  `c:"max_vl_num"`
	SMSL          uint8  `c:"sm_sl"`
	SubnetTimeout uint8  `c:"subnet_timeout"`
	InitTypeReply uint8  `c:"init_type_reply"`
	ActiveWidth   uint8  `c:"active_width"`
	ActiveSpeed   uint8  `c:"active_speed"`
	PhysState     uint8  `c:"phys_state"`
	LinkLayer     uint8  `c:"link_layer"`
	Flags         uint8  `c:"flags"`
	PortCapFlags2 uint16 `c:"port_cap_flags2"`
}

// GID mirrors union ibv_gid.
type GID struct {
	_   structs.HostLayout
	_   [0]uint64 // the C union is 8-byte aligned through its __be64 members
	Raw [16]byte  `c:"raw"`
}

// CMID mirrors struct rdma_cm_id.
type CMID struct {
	_             structs.HostLayout
	Verbs         Ptr[Context]      `c:"verbs"`
	Channel       Ptr[EventChannel] `c:"channel"`
	Context       uintptr           `c:"context"`
	QP            Ptr[QP]           `c:"qp"`
	SrcAddr       [128]byte         `c:"route.addr.src_storage"` // a sockaddr of any family
	DstAddr       [128]byte         `c:"route.addr.dst_storage"`
	_             [56]byte          // route.addr.addr (ib addresses), path_rec, num_paths
	PS            uint32            `c:"ps"`
	PortNum       uint8             `c:"port_num"`
	_             [3]byte
	Event         uintptr          `c:"event"`
	SendCQChannel Ptr[CompChannel] `c:"send_cq_channel"`
	SendCQ        Ptr[CQ]          `c:"send_cq"`
	RecvCQChannel Ptr[CompChannel] `c:"recv_cq_channel"`
	RecvCQ        Ptr[CQ]          `c:"recv_cq"`
	SRQ           uintptr          `c:"srq"`
	PD            Ptr[PD]          `c:"pd"`
	QPType        uint32           `c:"qp_type"`
	_             [4]byte
}

// CMEvent mirrors struct rdma_cm_event; only the conn member of the param
// union is named.
type CMEvent struct {
	_                  structs.HostLayout
	ID                 Ptr[CMID] `c:"id"`
	ListenID           Ptr[CMID] `c:"listen_id"`
	Event              uint32    `c:"event"`
	Status             int32     `c:"status"`
	ConnPrivateData    uintptr   `c:"param.conn.private_data"`
	ConnPrivateDataLen uint8     `c:"param.conn.private_data_len"`
	_                  [47]byte
}

// ConnParam mirrors struct rdma_conn_param.
type ConnParam struct {
	_                  structs.HostLayout
	PrivateData        uintptr `c:"private_data"`
	PrivateDataLen     uint8   `c:"private_data_len"`
	ResponderResources uint8   `c:"responder_resources"`
	InitiatorDepth     uint8   `c:"initiator_depth"`
	FlowControl        uint8   `c:"flow_control"`
	RetryCount         uint8   `c:"retry_count"`
	RNRRetryCount      uint8   `c:"rnr_retry_count"`
	SRQ                uint8   `c:"srq"`
	_                  [1]byte
	QPNum              uint32 `c:"qp_num"`
	_                  [4]byte
}

// AddrInfo mirrors struct rdma_addrinfo.
type AddrInfo struct {
	_            structs.HostLayout
	Flags        int32         `c:"ai_flags"`
	Family       int32         `c:"ai_family"`
	QPType       int32         `c:"ai_qp_type"`
	PortSpace    int32         `c:"ai_port_space"`
	SrcLen       uint32        `c:"ai_src_len"`
	DstLen       uint32        `c:"ai_dst_len"`
	SrcAddr      uintptr       `c:"ai_src_addr"`
	DstAddr      uintptr       `c:"ai_dst_addr"`
	SrcCanonname uintptr       `c:"ai_src_canonname"`
	DstCanonname uintptr       `c:"ai_dst_canonname"`
	RouteLen     uint64        `c:"ai_route_len"`
	Route        uintptr       `c:"ai_route"`
	ConnectLen   uint64        `c:"ai_connect_len"`
	Connect      uintptr       `c:"ai_connect"`
	Next         Ptr[AddrInfo] `c:"ai_next"`
}

// Sockaddr mirrors struct sockaddr, the family that tells a sockaddr_in
// from a sockaddr_in6 (unix.RawSockaddrInet4 and RawSockaddrInet6, which
// the layout test checks too).
type Sockaddr struct {
	_      structs.HostLayout
	Family uint16   `c:"sa_family"`
	Data   [14]byte `c:"sa_data"`
}

// LinkMap mirrors the leading members of glibc's struct link_map (prefix), as
// dlinfo(RTLD_DI_LINKMAP) returns it.
type LinkMap struct {
	_    structs.HostLayout
	Addr uintptr `c:"l_addr"`
	Name uintptr `c:"l_name"`
}

// RTLDDILinkMap is dlinfo's RTLD_DI_LINKMAP request.
const RTLDDILinkMap = 2

var (
	offsetSrcAddr = unsafe.Offsetof(CMID{}.SrcAddr)
	offsetDstAddr = unsafe.Offsetof(CMID{}.DstAddr)
)
