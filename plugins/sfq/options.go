package sfq

import "github.com/txlab/txlab/framework/qdisc"

// parseSize is tc's get_size: bytes, with an optional case-insensitive
// suffix, stored in a u32.
func parseSize(key, s string) (uint32, error) {
	return qdisc.ParseTcU32("sfq", key, s, qdisc.TcSizeUnits, "size", "1514, 1514b, 2kb", "bytes")
}
