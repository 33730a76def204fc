package tc

import (
	"strconv"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// SizeSpec is struct tc_sizespec as tc sends it (TCA_STAB_BASE), after
// tc_calc_size_table: a qdisc's size table ("stab"), which the kernel
// applies to every packet the qdisc enqueues (qdisc_calculate_pkt_len),
// so the qdisc counts and shapes by the size the link layer makes of
// the packet, not by skb->len.
type SizeSpec struct {
	CellLog, SizeLog uint8
	CellAlign        int16
	Overhead         int32
	LinkLayer        uint8
	MPU, MTU, TSize  uint32
	// Data is TCA_STAB_DATA: TSize sizes, each >> SizeLog, for the
	// cells of 1 << CellLog bytes.
	Data []uint16
}

// maxStabData is how many table entries fit tc's netlink message
// (addattr_l's bound, MAX_MSG 16384, less the headers, the kind and the
// table's base): a larger tsize is tc's "message exceeded bound".
const maxStabData = (16384 - 128) / 2

// parseStab is parse_size_table after "stab": mtu, tsize, mpu, overhead
// and linklayer, until a word that is none of them; then
// tc_calc_size_table. A table with nothing to adjust (no linklayer, mpu
// or overhead) makes tc fail without a message; txlab says why.
func (r *wordReader) parseStab() (*SizeSpec, error) {
	if _, err := r.next(); err != nil {
		return nil, err
	}
	var s SizeSpec
	if matches(r.words[r.i], "help") {
		return nil, qdisc.Syntaxf("\"stab help\" is not supported: tc prints its usage; see README.md, \"Qdiscs in tc words\"")
	}
	for ; r.i < len(r.words); r.i++ {
		w := r.words[r.i]
		var dst *uint32
		switch {
		case matches(w, "mtu"):
			dst = &s.MTU
		case matches(w, "mpu"):
			dst = &s.MPU
		case matches(w, "tsize"):
			dst = &s.TSize
		case matches(w, "overhead"):
			v, err := r.next()
			if err != nil {
				return nil, err
			}
			if s.Overhead != 0 {
				return nil, dupArg("overhead", v)
			}
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return nil, invArg("invalid overhead", "overhead")
			}
			s.Overhead = int32(n)
			continue
		case matches(w, "linklayer"):
			v, err := r.next()
			if err != nil {
				return nil, err
			}
			if s.LinkLayer != units.LinkUnaware {
				return nil, dupArg("linklayer", v)
			}
			if s.LinkLayer, err = units.Linklayer(v); err != nil {
				return nil, invArg("invalid linklayer", "linklayer")
			}
			continue
		default:
			r.i-- // the word after the table is the main loop's
			return s.calc()
		}
		v, err := r.next()
		if err != nil {
			return nil, err
		}
		if *dst != 0 {
			return nil, dupArg(w, v)
		}
		n, err := units.GetUnsigned(v, 10)
		if err != nil {
			return nil, invArg("invalid "+w, w)
		}
		*dst = n
	}
	r.i--
	return s.calc()
}

// calc is check_size_table_opts and tc_calc_size_table.
func (s SizeSpec) calc() (*SizeSpec, error) {
	if s.LinkLayer < units.LinkEthernet && s.MPU == 0 && s.Overhead == 0 {
		return nil, qdisc.Syntaxf("stab: nothing to adjust (give overhead, mpu or linklayer; tc fails without a message)")
	}
	if s.LinkLayer <= units.LinkEthernet && s.MPU == 0 {
		// Only an overhead: no table.
		s.MTU, s.TSize, s.CellLog, s.CellAlign = 0, 0, 0, 0
		return &s, nil
	}
	if s.MTU == 0 {
		s.MTU = 2047
	}
	if s.TSize == 0 {
		s.TSize = 512
	}
	if s.TSize > maxStabData {
		return nil, qdisc.Syntaxf("stab tsize %d: addattr_l ERROR: message exceeded bound of 16384", s.TSize)
	}
	for s.CellLog = 0; s.CellLog < 32 && uint64(s.MTU)>>s.CellLog > uint64(s.TSize)-1; s.CellLog++ {
	}
	s.Data = make([]uint16, s.TSize)
again:
	for i := int(s.TSize) - 1; i >= 0; i-- {
		sz := (uint64(i) + 1) << s.CellLog
		sz = max(sz, uint64(s.MPU)) // tc_adjust_size
		if s.LinkLayer == units.LinkATM && sz <= 0xffffffff {
			sz = uint64(units.AlignATM(uint32(sz)))
		}
		if sz>>s.SizeLog > 0xffff {
			s.SizeLog++
			goto again
		}
		s.Data[i] = uint16(sz >> s.SizeLog)
	}
	s.CellAlign = -1 // "due to the sz calc"
	return &s, nil
}

// Words is the table as tc words, for a command printed back.
func (s *SizeSpec) Words() []string {
	out := []string{"stab"}
	if s.LinkLayer != units.LinkUnaware {
		out = append(out, "linklayer", units.LinkName(s.LinkLayer))
	}
	if s.Overhead != 0 {
		out = append(out, "overhead", strconv.Itoa(int(s.Overhead)))
	}
	if s.MPU != 0 {
		out = append(out, "mpu", strconv.FormatUint(uint64(s.MPU), 10))
	}
	if s.MTU != 0 {
		out = append(out, "mtu", strconv.FormatUint(uint64(s.MTU), 10))
	}
	if s.TSize != 0 {
		out = append(out, "tsize", strconv.FormatUint(uint64(s.TSize), 10))
	}
	return out
}

// String is print_size_table's line (tc -d qdisc show): " linklayer
// atm overhead 44 mpu 64 mtu 2047 tsize 512 ", the fields tc sent that
// are not 0.
func (s *SizeSpec) String() string {
	w := s.Words()[1:]
	out := " "
	for i := 0; i+1 < len(w); i += 2 {
		out += w[i] + " " + w[i+1] + " "
	}
	return out
}

// PktLen is __qdisc_calculate_pkt_len: the size the qdisc counts for a
// packet of skb->len bytes (at least 1).
func (s *SizeSpec) PktLen(skbLen uint32) uint32 {
	pktLen := int64(skbLen) + int64(s.Overhead)
	if s.TSize != 0 {
		slot := pktLen + int64(s.CellAlign)
		if slot < 0 {
			slot = 0
		}
		slot >>= s.CellLog
		if slot < int64(s.TSize) {
			pktLen = int64(s.Data[slot])
		} else {
			pktLen = int64(s.Data[s.TSize-1])*(slot/int64(s.TSize)) + int64(s.Data[slot%int64(s.TSize)])
		}
		pktLen <<= s.SizeLog
	}
	return uint32(min(max(pktLen, 1), 0xffffffff))
}
