// Package plugin runs qdiscs and drivers in other processes: the host
// side on github.com/hashicorp/go-plugin (handshake, SecureConfig
// checksum, AutoMTLS, hclog), the plugin side's server, and the data
// path between them (frames in shared memory, or over a gRPC stream).
package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/plugin/shm"
)

// Handshake is the go-plugin handshake: a plugin built against another
// protocol version is refused at start.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "TXLAB_PLUGIN",
	MagicCookieValue: "txlab-tx-path-plugin",
}

// FrameProtocol is the data path's frame version (wire/frame.go). 2: the
// smaller qdisc contract (Init with a context and posted ops, optional
// Peek and Reset, watchdog cancel, a qdisc timer, typed xstats, declared
// drop reasons, seed and prices only inside the context). 3: a change
// runs with a context (MQChange carries the time and replies with posted
// ops), and an options error says its class (StatusRefused,
// StatusLacks, StatusSyntax beside StatusInvalid). 4: classful qdiscs
// (a packet is 80 bytes with skb->mark; qdisc upcalls for the leaves;
// class and filter methods). 5: 4 with the qdisc duplicate op
// (OpQdiscDuplicate, posted by Ctx.Duplicate) and a packet's flags byte
// (skb.PacketDup: the clone handed back to the qdisc that asked for it,
// at the root of its tree). 6: a packet carries its TCP header's flags
// (skb.Packet.TCPFlags, byte 76: u32 reads them), and a leaf enqueue's
// answer says how many packets the leaf made of each
// (qdisc.LeafResult.Segs: cake's split-gso as a leaf). 7: the qdisc
// per-flow lines op (OpQdiscLines, posted by Ctx.Lines). 8: the sibling
// read op (OpQdiscReadSibling, posted by Ctx.ReadSibling). 9: a class
// dump carries a class's own qlen and backlog, and MQClasses answers a
// classless qdisc's flows (qdisc.FlowClasses). 10: a dequeued packet
// carries its DSCP, skb->priority and skb->mark beside its ECN bits
// (what a qdisc or its filters' actions wrote into the skb). 11: a
// change's answer ends with a status, a refusal after part of the
// change was applied (qdisc.PartialChange: fq_pie's limit before its
// flows refusal). 12: an enqueue call says which of its packets are
// one GSO skb's segments (qdisc.SegCtx: cake's split-gso classifies
// the skb once). 13: a filters call carries the tc command's time (a
// new cls_flow filter's perturbation timer starts then). 14: the
// watchdog op carries a slack (qdisc.Ctx.WatchdogRange, fq's
// qdisc_watchdog_schedule_range_ns). 15: an enqueue call carries its
// packets' TCP headers for a qdisc that reads them (qdisc.TCPCtx:
// cake's ACK filter). 16: a class dump carries its default leaf's words
// and the limit fifo_set_limit gives its leaf (qdisc.Class.DefaultLeaf,
// FifoLimit: tbf's class). 17: a class dump says whether a class holds
// a leaf only once one is grafted, a graft onto one is a call of its own
// (qdisc.Class.GraftOnly, qdisc.Grafter: netem's child), and a packet a
// qdisc hands a leaf carries its ECN and DSCP (qdisc.LeafPacket: netem's
// CE mark before its child). 18: a packet's byte 35 is its flags
// whole (skb.Packet.Flags: PacketDup, and PacketTxtimeTAI, its socket's
// SO_TXTIME on CLOCK_TAI: etf's check), a
// class dump says whether its drops and overlimits are its leaf's while
// its Sent counters are its own (qdisc.Class.LeafQstats: qfq's), and an
// init or change answer may carry the device's traffic classes
// (qdisc.Info.TCMap: taprio's).
const FrameProtocol = 18

// IsPluginProcess reports whether this process was started by a host as
// a plugin.
func IsPluginProcess() bool { return os.Getenv(Handshake.MagicCookieKey) == Handshake.MagicCookieValue }

// grpcPlugin is the go-plugin Plugin for both sides.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	cat *Catalog
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, &grpcServer{cat: p.cat})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return pb.NewPluginClient(cc), nil
}

var pluginMap = map[string]goplugin.Plugin{"txlab": &grpcPlugin{}}

// Serve serves cat as a plugin process; it returns when the host is done.
// The process exits when its host does, however the host ended, and
// takes whatever it forked with it (orphan.go).
//
// With TXLAB_PLUGIN_CPUPROFILE=FILE the plugin writes a CPU profile of
// itself to FILE.PID (go tool pprof reads it), for plugin authors.
func Serve(cat *Catalog) {
	watchHost()
	if path := os.Getenv(EnvCPUProfile); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]goplugin.Plugin{"txlab": &grpcPlugin{cat: cat}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

// grpcServer is the plugin's gRPC service.
type grpcServer struct {
	pb.UnimplementedPluginServer
	cat *Catalog
}

func (g *grpcServer) Describe(context.Context, *pb.Empty) (*pb.Description, error) {
	d := &pb.Description{Version: g.cat.Version, Protocol: FrameProtocol}
	for _, name := range sortedKeys(g.cat.Qdiscs) {
		d.Kinds = append(d.Kinds, &pb.Kind{Type: "qdisc", Name: name, Help: g.cat.Qdiscs[name].Help})
	}
	for _, name := range sortedKeys(g.cat.Drivers) {
		d.Kinds = append(d.Kinds, &pb.Kind{Type: "driver", Name: name, Help: g.cat.Drivers[name].Help})
	}
	return d, nil
}

func (g *grpcServer) Open(_ context.Context, req *pb.OpenRequest) (*pb.OpenReply, error) {
	ch, err := shm.Open(req.Path, int(req.Size))
	if err != nil {
		return nil, err
	}
	ppid := os.Getppid()
	go func() {
		err := newServer(g.cat, &shmPluginSide{ch: ch, ppid: ppid}).serve()
		ch.Close()
		if err != nil && !errors.Is(err, errHostGone) {
			fmt.Fprintln(os.Stderr, "txlab plugin:", err)
			os.Exit(3)
		}
		hostGone(0)
	}()
	return &pb.OpenReply{}, nil
}

func (g *grpcServer) Exchange(stream pb.Plugin_ExchangeServer) error {
	err := newServer(g.cat, &streamPluginSide{s: stream}).serve()
	if errors.Is(err, errHostGone) {
		return nil
	}
	return err
}

var errHostGone = errors.New("host gone")

// shmPluginSide is the plugin's end of the shared-memory channel. It
// waits for ever, but notices its host is gone.
type shmPluginSide struct {
	ch   *shm.Chan
	ppid int
}

func (t *shmPluginSide) Send(b []byte) error { return t.ch.Send(b) }
func (t *shmPluginSide) Recv() ([]byte, error) {
	return t.ch.Recv(0, func() error {
		if os.Getppid() != t.ppid {
			return errHostGone
		}
		return nil
	})
}

type streamPluginSide struct {
	s pb.Plugin_ExchangeServer
}

func (t *streamPluginSide) Send(b []byte) error { return t.s.Send(&pb.Frame{Data: b}) }
func (t *streamPluginSide) Recv() ([]byte, error) {
	f, err := t.s.Recv()
	if err != nil {
		return nil, errHostGone
	}
	return f.Data, nil
}

// shmHostSide is the host's end of the shared-memory channel.
type shmHostSide struct {
	ch    *shm.Chan
	alive func() error
}

func (t *shmHostSide) Send(b []byte) error { return t.ch.Send(b) }
func (t *shmHostSide) Recv(timeout time.Duration) ([]byte, error) {
	b, err := t.ch.Recv(timeout, t.alive)
	if errors.Is(err, shm.ErrTimeout) {
		return nil, fmt.Errorf("no answer within %v: the plugin hangs", timeout)
	}
	return b, err
}
func (t *shmHostSide) Close() error { return t.ch.Close() }

// streamHostSide is the host's end of the Exchange stream.
type streamHostSide struct {
	s      pb.Plugin_ExchangeClient
	cancel context.CancelFunc
	frames chan recvd
	alive  func() error
}

type recvd struct {
	b   []byte
	err error
}

func newStreamHostSide(pc pb.PluginClient, alive func() error) (*streamHostSide, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := pc.Exchange(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	t := &streamHostSide{s: s, cancel: cancel, frames: make(chan recvd, 1), alive: alive}
	go func() {
		for {
			f, err := s.Recv()
			if err != nil {
				t.frames <- recvd{err: err}
				return
			}
			t.frames <- recvd{b: f.Data}
		}
	}()
	return t, nil
}

func (t *streamHostSide) Send(b []byte) error { return t.s.Send(&pb.Frame{Data: b}) }
func (t *streamHostSide) Recv(timeout time.Duration) ([]byte, error) {
	var tc <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		tc = tm.C
	}
	select {
	case r := <-t.frames:
		if r.err != nil {
			if err := t.alive(); err != nil {
				return nil, err
			}
		}
		return r.b, r.err
	case <-tc:
		return nil, fmt.Errorf("no answer within %v: the plugin hangs", timeout)
	}
}
func (t *streamHostSide) Close() error { t.cancel(); return nil }
