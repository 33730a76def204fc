package plugin

import (
	"reflect"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// A driver's Info crosses the plugin boundary whole: every field a
// driver sets comes back as it was (a field the wire forgets would make
// an out-of-process driver behave unlike the same driver in process).
func TestDriverInfoRoundTrip(t *testing.T) {
	in := driver.Info{RateBps: 1e11, RingSize: 512, LLTX: true, NoQueue: true, BQL: true, Vectors: 4,
		QueueVec: []int{0, 1, 2, 3}, Wire: true, NoXPS: true,
		Rx: &driver.RxInfo{RingSize: 2048, MaxQueues: 64, QueueVec: []int{3, 2}, ITR: 50 * sim.Microsecond, BufSize: 3072,
			RefillBatch: 16, LUTSize: 512, QueuePackets: "rx-%d.packets", QueueBytes: "rx-%d.bytes", PortDropped: "rx_dropped",
			ITRProfile: []sim.Time{2 * sim.Microsecond, 8 * sim.Microsecond, 16 * sim.Microsecond}, DIMStart: 1, INTRL: 4 * sim.Microsecond, OwnITR: true}}
	// Every field set, the receive side's too: a zero one would pass
	// the round trip unseen.
	for _, v := range []reflect.Value{reflect.ValueOf(in), reflect.ValueOf(*in.Rx)} {
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is zero in the test's value: set it", v.Type(), v.Type().Field(i).Name)
			}
		}
	}
	if out := driverInfoFromPB(driverInfoToPB(in)); !reflect.DeepEqual(out, in) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}
