// Package ifname is the kernel's test of a network device's name
// (dev_valid_name in net/core/dev.c), shared by every place txlab names
// a device: ifb and bonding devices, --pcap-dev.
package ifname

import "strings"

// Size is IFNAMSIZ: a name and its NUL.
const Size = 16

// Valid is dev_valid_name: 1 to Size-1 bytes, not "." or "..", no '/',
// ':' or white space (isspace's set).
func Valid(name string) bool {
	return name != "" && len(name) < Size && name != "." && name != ".." && !strings.ContainsAny(name, "/: \t\n\r\v\f")
}
