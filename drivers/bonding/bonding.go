// Package bonding is the Linux bonding driver's transmit policy
// (drivers/net/bonding/bond_main.c): its modes, the xmit_hash_policy
// hashes (bond_xmit_hash), balance-rr's slave ids (bond_rr_gen_slave_id),
// bond_select_queue, and a bond's options as `ip link add ... type bond`
// takes them (ip/iplink_bond.c). A bond is a stacked device: its
// ndo_start_xmit hands each skb to a slave's __dev_queue_xmit, so the
// host (framework/netdev) builds the device around this package and runs
// the recursion; the slaves' drivers are ordinary driver models (and
// plugins).
package bonding

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/ifname"
	"github.com/txlab/txlab/framework/skb"
)

// Mode is a bonding mode (BOND_MODE_*), numbered as the kernel does.
type Mode uint8

// The modes, in ip's mode_tbl order (their numbers).
const (
	ModeRoundRobin   Mode = iota // balance-rr
	ModeActiveBackup             // active-backup
	ModeXOR                      // balance-xor
	ModeBroadcast                // broadcast
	Mode8023AD                   // 802.3ad
	ModeTLB                      // balance-tlb
	ModeALB                      // balance-alb
)

var modeTbl = [...]string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// modeNames are bond_mode_name's (/proc/net/bonding's "Bonding Mode:").
var modeNames = [...]string{"load balancing (round-robin)", "fault-tolerance (active-backup)", "load balancing (xor)",
	"fault-tolerance (broadcast)", "IEEE 802.3ad Dynamic link aggregation", "transmit load balancing", "adaptive load balancing"}

// String is the mode as ip writes it ("balance-xor").
func (m Mode) String() string { return modeTbl[m] }

// Name is bond_mode_name: "load balancing (xor)".
func (m Mode) Name() string { return modeNames[m] }

// modelled says which modes the model transmits with.
func (m Mode) modelled() bool {
	return m == ModeRoundRobin || m == ModeActiveBackup || m == ModeXOR
}

// Policy is an xmit_hash_policy (BOND_XMIT_POLICY_*).
type Policy uint8

// The policies, in ip's xmit_hash_policy_tbl order (their numbers).
const (
	PolicyLayer2     Policy = iota // layer2
	PolicyLayer34                  // layer3+4
	PolicyLayer23                  // layer2+3
	PolicyEncap23                  // encap2+3
	PolicyEncap34                  // encap3+4
	PolicyVlanSrcMAC               // vlan+srcmac
)

var policyTbl = [...]string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}

// String is the policy as ip writes it ("layer3+4").
func (p Policy) String() string { return policyTbl[p] }

// Defaults and bounds of a bond.
const (
	// DefaultTxQueues is BOND_DEFAULT_TX_QUEUES, the tx_queues module
	// parameter's default: a bond has 16 TX queues.
	DefaultTxQueues = 16
	// MaxTxQueues bounds tx_queues (bond_check_params: 1..255);
	// numtxqueues may go to 4096 (rtnl_create_link).
	MaxTxQueues    = 255
	MaxNumTxQueues = 4096
	// MaxPacketsPerSlave is packets_per_slave's bound (0..USHRT_MAX).
	MaxPacketsPerSlave = 65535
	// MaxNestDev is MAX_NEST_DEV: the deepest stack of devices
	// (__netdev_upper_dev_link refuses lower_level + upper_level above it).
	MaxNestDev = 8
	// MaxSlaves is txlab's bound on a bond's slaves (the kernel has none;
	// each is a simulated NIC).
	MaxSlaves = 64
)

// The Ethernet header every packet of the model carries (the ones
// framework/pcap writes): the bond's MAC as source, one neighbour's as
// destination, IPv4.
var (
	SrcMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	DstMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

const ethPIP = 0x0800 // ETH_P_IP

// Params is one bond as `ip link add NAME type bond ...` and its slaves
// describe it.
type Params struct {
	Name            string
	Mode            Mode
	Policy          Policy
	PacketsPerSlave uint32 // balance-rr: packets to a slave before the next (0: a random slave)
	TxQueues        int    // the device's TX queues
	// Slaves are the slaves by name, in enslaving order; SlaveCount,
	// when Slaves is empty, asks for that many new NICs.
	Slaves     []string
	SlaveCount int
}

// Default is a bond as `ip link add bond0 type bond` makes it:
// balance-rr (the mode module parameter's default), layer2, one packet
// per slave, 16 TX queues, no slaves.
func Default(name string) Params {
	return Params{Name: name, Mode: ModeRoundRobin, Policy: PolicyLayer2, PacketsPerSlave: 1, TxQueues: DefaultTxQueues}
}

// Options is the bond as `ip -d link show` lists its transmit options.
func (p Params) Options() string {
	s := "mode " + p.Mode.String()
	if p.Mode == ModeXOR || p.Mode == Mode8023AD {
		s += " xmit_hash_policy " + p.Policy.String()
	}
	if p.Mode == ModeRoundRobin {
		s += " packets_per_slave " + strconv.FormatUint(uint64(p.PacketsPerSlave), 10)
	}
	return s
}

// Words is the bond in Parse's words (what Parse reads back).
func (p Params) Words() string {
	s := p.Name + " mode " + p.Mode.String() + " xmit_hash_policy " + p.Policy.String() +
		" packets_per_slave " + strconv.FormatUint(uint64(p.PacketsPerSlave), 10) + " numtxqueues " + strconv.Itoa(p.TxQueues)
	if len(p.Slaves) > 0 {
		return s + " slaves " + strings.Join(p.Slaves, ",")
	}
	return s + " slaves " + strconv.Itoa(p.SlaveCount)
}

// Error is a refusal as ip or the kernel words it ("Error: ...",
// "RTNETLINK answers: ...").
type Error string

func (e Error) Error() string { return string(e) }

// errorf is an Error from a format.
func errorf(format string, a ...any) error { return Error(fmt.Sprintf(format, a...)) }

// invarg is iproute2's invarg(): `Error: argument "ARG" is wrong: MSG`.
func invarg(msg, arg string) error {
	return errorf("Error: argument %q is wrong: %s", arg, msg)
}

// getIndex is iplink_bond.c's get_index: a name of tbl, or its number.
func getIndex(tbl []string, name string) int {
	if n, err := strconv.Atoi(name); err == nil && n >= 0 && n < len(tbl) {
		return n
	}
	for i, t := range tbl {
		if t == name {
			return i
		}
	}
	return -1
}

// IsName reports whether w names a device, as the first word of a bond
// may: not one of Parse's keywords.
func IsName(w string) bool {
	switch w {
	case "mode", "xmit_hash_policy", "packets_per_slave", "tx_queues", "numtxqueues", "slaves":
		return false
	}
	return w != ""
}

// Parse reads one bond: an optional name (dflt when left out), then
// ip-link's bond words mode, xmit_hash_policy and packets_per_slave,
// the device's queues (numtxqueues, ip link's, 1..4096; or tx_queues, the
// module parameter, 1..255), and txlab's "slaves N" (N new NICs) or
// "slaves DEV,DEV" (devices by name: ethN NICs, or other bonds). Errors
// are ip's and the kernel's, naming the word that was wrong.
func Parse(words []string, dflt string) (Params, error) {
	p := Default(dflt)
	if len(words) > 0 && IsName(words[0]) {
		p.Name = words[0]
		words = words[1:]
	}
	if err := checkName(p.Name); err != nil {
		return p, err
	}
	seen := map[string]bool{}
	slaves := false
	for i := 0; i < len(words); i++ {
		key := words[i]
		if !IsName(key) && seen[key] {
			return p, errorf("Error: duplicate %q: %q is the second value.", key, next(words, i))
		}
		seen[key] = true
		if IsName(key) {
			return p, errorf("bond: unknown command %q? (a bond takes mode, xmit_hash_policy, packets_per_slave, numtxqueues or tx_queues, and slaves)", key)
		}
		if i+1 >= len(words) {
			return p, errorf("Command line is not complete: %q needs a value", key)
		}
		i++
		v := words[i]
		switch key {
		case "mode":
			m := getIndex(modeTbl[:], v)
			if m < 0 {
				return p, invarg("invalid mode", v)
			}
			p.Mode = Mode(m)
			if !p.Mode.modelled() {
				return p, errorf("mode %s is not modelled (balance-rr, active-backup and balance-xor are)", p.Mode)
			}
		case "xmit_hash_policy":
			x := getIndex(policyTbl[:], v)
			if x < 0 {
				return p, invarg("invalid xmit_hash_policy", v)
			}
			p.Policy = Policy(x)
		case "packets_per_slave":
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				return p, invarg("invalid packets_per_slave", v)
			}
			if n > MaxPacketsPerSlave {
				return p, errorf("option packets_per_slave: invalid value (%d): allowed values 0 - %d", n, MaxPacketsPerSlave)
			}
			p.PacketsPerSlave = uint32(n)
		case "numtxqueues":
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, invarg(`Invalid "numtxqueues" value`, v)
			}
			if n < 1 || n > MaxNumTxQueues {
				return p, errorf("Error: Invalid number of transmit queues (numtxqueues %d: 1..%d).", n, MaxNumTxQueues)
			}
			p.TxQueues = n
		case "tx_queues":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxTxQueues {
				return p, errorf("tx_queues (%s) should be between 1 and %d", v, MaxTxQueues)
			}
			p.TxQueues = n
		case "slaves":
			slaves = true
			if n, err := strconv.Atoi(v); err == nil {
				if n < 1 || n > MaxSlaves {
					return p, errorf("slaves %d: a bond needs 1..%d slaves (bond_start_xmit drops every packet of a bond without one)", n, MaxSlaves)
				}
				p.SlaveCount = n
				continue
			}
			for _, s := range strings.Split(v, ",") {
				if err := checkName(s); err != nil {
					return p, errorf("slaves %s: %s", v, err)
				}
				p.Slaves = append(p.Slaves, s)
			}
			if len(p.Slaves) > MaxSlaves {
				return p, errorf("slaves %s: a bond needs 1..%d slaves", v, MaxSlaves)
			}
		}
	}
	if !slaves {
		return p, errorf("bond %s has no slaves: give \"slaves N\" (N new NICs) or \"slaves eth0,eth1\" (bond_start_xmit drops every packet of a bond without one)", p.Name)
	}
	return p, nil
}

func next(words []string, i int) string {
	if i+1 < len(words) {
		return words[i+1]
	}
	return ""
}

// checkName is ip link's refusal of a name dev_valid_name refuses.
func checkName(name string) error {
	switch {
	case ifname.Valid(name):
		return nil
	case len(name) >= ifname.Size:
		return errorf("Error: argument %q is wrong: \"name\" not a valid ifname (at most %d bytes)", name, ifname.Size-1)
	}
	return errorf("Error: argument %q is wrong: \"name\" not a valid ifname", name)
}

// ParseList reads several bonds separated by ';', named bond0, bond1,
// ... in order when a name is left out.
func ParseList(text string) ([]Params, error) {
	var out []Params
	names := map[string]bool{}
	for i, part := range strings.Split(text, ";") {
		words := strings.Fields(part)
		if len(words) == 0 {
			if strings.TrimSpace(text) == "" {
				return nil, nil
			}
			return nil, errorf("bond %d is empty (bonds are separated by ';')", i+1)
		}
		p, err := Parse(words, fmt.Sprintf("bond%d", len(out)))
		if err != nil {
			return nil, err
		}
		if names[p.Name] {
			return nil, errorf("%s: RTNETLINK answers: File exists (a second bond of that name)", p.Name)
		}
		names[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}

// Bond is one bond's transmit state: its parameters and balance-rr's
// counter, per CPU since 848ca9182a7d ("bonding: use per-cpu
// rr_tx_counter", 5.15; a single counter before).
type Bond struct {
	Params
	// KeepLowBit is a kernel before b5f862180d70 ("bonding: discard
	// lowest hash bit for 802.3ad layer3+4", Nov 2017): bond_xmit_hash
	// returns the layer3+4 fold whole (XmitHash).
	KeepLowBit bool
	rr         []uint32
	rand       func() uint32 // get_random_u32, for packets_per_slave 0
}

// New makes a bond's transmit state for ncpu CPUs; rand is the random
// stream packets_per_slave 0 draws from.
func New(p Params, ncpu int, rand func() uint32) *Bond {
	return &Bond{Params: p, rr: make([]uint32, ncpu), rand: rand}
}

// SlaveID is which of n usable slaves gets p, sent from cpu: the mode's
// choice (bond_xmit_roundrobin_slave_get, bond_xmit_xor_slave_get's
// bond_xmit_hash % count, active-backup's curr_active_slave: the first
// slave), and what the hash read (Work), which the host prices. n must
// be > 0.
func (b *Bond) SlaveID(p skb.Packet, cpu, n int) (id int, work Work) {
	switch b.Mode {
	case ModeRoundRobin:
		return int(b.rrGenSlaveID(cpu) % uint32(n)), WorkNone
	case ModeXOR:
		h, w := XmitHash(b.Policy, p, b.KeepLowBit)
		return int(h % uint32(n)), w
	}
	return 0, WorkNone
}

// rrGenSlaveID is bond_rr_gen_slave_id: this_cpu_inc_return of the
// counter (so a CPU's first packet goes to slave 1), divided by
// packets_per_slave; a random id for packets_per_slave 0.
func (b *Bond) rrGenSlaveID(cpu int) uint32 {
	switch b.PacketsPerSlave {
	case 0:
		return b.rand()
	case 1:
		b.rr[cpu]++
		return b.rr[cpu]
	}
	b.rr[cpu]++
	return b.rr[cpu] / b.PacketsPerSlave // reciprocal_divide: exact for u32
}

// Work is what bond_xmit_hash did to hash a packet, which the host
// prices.
type Work uint8

const (
	// WorkNone: no hash, or one of the Ethernet header or skb->hash
	// (bond_eth_hash, bond_vlan_srcmac_hash, encap3+4's l4_hash): not
	// priced.
	WorkNone Work = iota
	// WorkHeaders: bond_flow_dissect without the flow dissector (layer2+3,
	// layer3+4): bond_flow_ip's addresses, skb_flow_get_ports, then
	// bond_ip_hash (cost bond_hash).
	WorkHeaders
	// WorkDissect: the flow dissector (__skb_flow_dissect; in 4.7
	// skb_flow_dissect_flow_keys), then bond_ip_hash (cost qdisc_hash):
	// encap2+3, and encap3+4 on an skb without an L4 hash, which the
	// model's skbs always carry.
	WorkDissect
)

// XmitHash is bond_xmit_hash for policy on p: the Ethernet header's last
// bytes (layer2), the addresses (layer2+3), the ports and addresses
// (layer3+4) as __bond_xmit_hash and bond_ip_hash fold them on a
// little-endian CPU, skb->hash for encap3+4 (a socket's skb carries
// l4_hash: skb_set_owner_w copies sk_txhash; a received one the NIC's
// RSS hash). Only encap2+3 runs the flow dissector: bond_flow_dissect
// reads layer2+3's and layer3+4's headers itself (bond_flow_ip,
// skb_flow_get_ports; in 4.7 too, where only a policy above
// BOND_XMIT_POLICY_LAYER23 called skb_flow_dissect_flow_keys).
// keepLowBit is a kernel before b5f862180d70, whose layer3+4 hash keeps
// its lowest bit (Bond.KeepLowBit).
func XmitHash(policy Policy, p skb.Packet, keepLowBit bool) (hash uint32, work Work) {
	switch policy {
	case PolicyEncap34:
		return p.Hash, WorkNone
	case PolicyLayer2:
		return ethHash(), WorkNone
	case PolicyVlanSrcMAC:
		// bond_vlan_srcmac_hash: no VLAN tag.
		vendor := uint32(SrcMAC[0])<<16 | uint32(SrcMAC[1])<<8 | uint32(SrcMAC[2])
		dev := uint32(SrcMAC[3])<<16 | uint32(SrcMAC[4])<<8 | uint32(SrcMAC[5])
		return vendor ^ dev, WorkNone
	}
	work = WorkHeaders
	if policy == PolicyEncap23 {
		work = WorkDissect
	}
	k := p.Keys
	if k.Proto != 6 && k.Proto != 17 {
		// No ports: 0, as 4.x's skb_flow_get_ports gives. Since
		// 5.x (skb_flow_get_icmp_tci) layer3+4 hashes an ICMP echo's
		// id in their place, which the model's keys do not carry: a
		// departure for ICMP on the 6.x profiles (no experiment bonds
		// ICMP).
		k.SrcPort, k.DstPort = 0, 0
	}
	if policy == PolicyLayer23 || policy == PolicyEncap23 {
		hash = ethHash()
	} else {
		// memcpy(&hash, &flow.ports.ports): the two ports in network
		// order, read as a little-endian u32.
		hash = bits.ReverseBytes32(uint32(k.SrcPort)<<16 | uint32(k.DstPort))
	}
	// bond_ip_hash: the addresses as __be32, read the same way.
	hash ^= bits.ReverseBytes32(k.Dst) ^ bits.ReverseBytes32(k.Src)
	hash ^= hash >> 16
	hash ^= hash >> 8
	if policy == PolicyLayer34 && !keepLowBit {
		// Discard the lowest bit: the common even ports pattern
		// (b5f862180d70; layer3+4 and encap3+4 only since 49aefd131739).
		hash >>= 1
	}
	return hash, work
}

// ethHash is bond_eth_hash: h_dest[5] ^ h_source[5] ^ h_proto.
func ethHash() uint32 { return uint32(DstMAC[5]^SrcMAC[5]) ^ ethPIP }

// SelectQueue is bond_select_queue: the recorded RX queue (rxQueue is
// skb_record_rx_queue's value, the queue + 1, 0 for none) folded into the
// bond's numTxQ queues, else queue 0. A locally sent skb always takes the
// bond's queue 0.
func SelectQueue(rxQueue uint16, numTxQ int) int {
	if rxQueue == 0 {
		return 0
	}
	q := int(rxQueue - 1)
	for q >= numTxQ {
		q -= numTxQ
	}
	return q
}
