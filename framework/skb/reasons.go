package skb

import "regexp"

// kernelReasons are the kernel's enum skb_drop_reason names without the
// SKB_DROP_REASON_ prefix (include/net/dropreason-core.h, net-next at
// 6.19, with QDISC_BURST_DROP from ffe4ccd359d0 and sch_sfq.c's
// QDISC_MAXFLOWS and QDISC_MAXDEPTH).
var kernelReasons = map[DropReason]bool{}

func init() {
	for _, r := range []string{
		"NOT_SPECIFIED", "NO_SOCKET", "PKT_TOO_SMALL", "TCP_CSUM", "SOCKET_FILTER", "UDP_CSUM",
		"NETFILTER_DROP", "OTHERHOST", "IP_CSUM", "IP_INHDR", "IP_RPFILTER", "UNICAST_IN_L2_MULTICAST",
		"XFRM_POLICY", "IP_NOPROTO", "SOCKET_RCVBUFF", "PROTO_MEM", "TCP_AUTH_HDR", "TCP_MD5NOTFOUND",
		"TCP_MD5UNEXPECTED", "TCP_MD5FAILURE", "TCP_AONOTFOUND", "TCP_AOUNEXPECTED", "TCP_AOKEYNOTFOUND",
		"TCP_AOFAILURE", "SOCKET_BACKLOG", "TCP_FLAGS", "TCP_ABORT_ON_DATA", "TCP_ZEROWINDOW", "TCP_OLD_DATA",
		"TCP_OVERWINDOW", "TCP_OFOMERGE", "TCP_RFC7323_PAWS", "TCP_OLD_SEQUENCE", "TCP_INVALID_SEQUENCE",
		"TCP_INVALID_ACK_SEQUENCE", "TCP_RESET", "TCP_INVALID_SYN", "TCP_CLOSE", "TCP_FASTOPEN", "TCP_OLD_ACK",
		"TCP_TOO_OLD_ACK", "TCP_ACK_UNSENT_DATA", "TCP_OFO_QUEUE_PRUNE", "TCP_OFO_DROP", "IP_OUTNOROUTES",
		"BPF_CGROUP_EGRESS", "IPV6DISABLED", "NEIGH_CREATEFAIL", "NEIGH_FAILED", "NEIGH_QUEUEFULL",
		"NEIGH_DEAD", "TC_EGRESS", "SECURITY_HOOK", "QDISC_DROP", "QDISC_BURST_DROP", "QDISC_OVERLIMIT",
		"QDISC_CONGESTED", "QDISC_MAXFLOWS", "QDISC_MAXDEPTH", "CAKE_FLOOD", "FQ_BAND_LIMIT", "FQ_HORIZON_LIMIT", "FQ_FLOW_LIMIT", "CPU_BACKLOG",
		"XDP", "TC_INGRESS", "UNHANDLED_PROTO", "SKB_CSUM", "SKB_GSO_SEG", "SKB_UCOPY_FAULT", "DEV_HDR",
		"DEV_READY", "FULL_RING", "NOMEM", "HDR_TRUNC", "TAP_FILTER", "TAP_TXFILTER", "ICMP_CSUM",
		"INVALID_PROTO", "IP_INADDRERRORS", "IP_INNOROUTES", "IP_LOCAL_SOURCE", "IP_INVALID_SOURCE",
		"IP_LOCALNET", "IP_INVALID_DEST", "PKT_TOO_BIG", "DUP_FRAG", "FRAG_REASM_TIMEOUT", "FRAG_TOO_FAR",
		"TCP_MINTTL", "IPV6_BAD_EXTHDR", "IPV6_NDISC_FRAG", "IPV6_NDISC_HOP_LIMIT", "IPV6_NDISC_BAD_CODE",
		"IPV6_NDISC_BAD_OPTIONS", "IPV6_NDISC_NS_OTHERHOST", "QUEUE_PURGE", "TC_COOKIE_ERROR",
		"PACKET_SOCK_ERROR", "TC_CHAIN_NOTFOUND", "TC_RECLASSIFY_LOOP", "VXLAN_INVALID_HDR",
		"VXLAN_VNI_NOT_FOUND", "MAC_INVALID_SOURCE", "VXLAN_ENTRY_EXISTS", "VXLAN_NO_REMOTE",
		"IP_TUNNEL_ECN", "TUNNEL_TXINFO", "LOCAL_MAC", "ARP_PVLAN_DISABLE",
	} {
		kernelReasons[DropReason(r)] = true
	}
}

// IsKernelReason reports whether r is one of the kernel's
// SKB_DROP_REASON_* names (given without the prefix).
func IsKernelReason(r DropReason) bool { return kernelReasons[r] }

var reasonName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidReasonName reports whether r is shaped like a kernel drop reason
// name: upper-case letters, digits and underscores, at most 64 bytes.
// A plugin's own reasons must be.
func ValidReasonName(r DropReason) bool { return reasonName.MatchString(string(r)) }
