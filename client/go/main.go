// contactd from Go: Hello, register a sphere and a half space, one query,
// then a stream updated at 1 kHz for a second. Built offline with Debian's
// golang-go (1.19) and golang-google-protobuf-dev (1.28), which has no
// protodelim: writeFrame / readFrame below are the whole framing.
//
// usage: contactd-go-example --addr unix:PATH | HOST:PORT [--ticks N]
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	pb "contactd/proto/contactdv1"
	"google.golang.org/protobuf/proto"
)

// writeFrame sends one Envelope preceded by its length as a varint.
func writeFrame(w io.Writer, env *pb.Envelope) error {
	body, err := proto.Marshal(env)
	if err != nil {
		return err
	}
	frame := binary.AppendUvarint(make([]byte, 0, len(body)+10), uint64(len(body)))
	_, err = w.Write(append(frame, body...))
	return err
}

// readFrame reads one length-prefixed Envelope.
func readFrame(r *bufio.Reader) (*pb.Envelope, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	env := &pb.Envelope{}
	return env, proto.Unmarshal(body, env)
}

type conn struct {
	w  net.Conn
	r  *bufio.Reader
	id uint64
}

// call sends one request and returns its reply (an Error becomes a Go error).
func (c *conn) call(env *pb.Envelope) (*pb.Envelope, error) {
	c.id++
	env.RequestId = c.id
	if err := writeFrame(c.w, env); err != nil {
		return nil, err
	}
	for {
		rep, err := readFrame(c.r)
		if err != nil {
			return nil, err
		}
		if _, progress := rep.Msg.(*pb.Envelope_RegisterProgress); progress {
			continue
		}
		if e := rep.GetError(); e != nil {
			return nil, fmt.Errorf("%s: %s", e.Code, e.Message)
		}
		if rep.RequestId != c.id {
			return nil, fmt.Errorf("reply to request %d, expected %d", rep.RequestId, c.id)
		}
		return rep, nil
	}
}

func body(id uint32, geom string, z float64) *pb.Body {
	return &pb.Body{BodyId: id, GeometryId: geom, Pose: &pb.Pose{Position: &pb.Vec3{Z: z}, Orientation: &pb.Quat{W: 1}}}
}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "go example: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7411", "unix:PATH or HOST:PORT")
	ticks := flag.Int("ticks", 1000, "stream updates, one per ms")
	flag.Parse()
	network, where := "tcp", *addr
	if strings.HasPrefix(where, "unix:") {
		network, where = "unix", strings.TrimPrefix(where, "unix:")
	}
	nc, err := net.Dial(network, where)
	if err != nil {
		fail("%v", err)
	}
	c := &conn{w: nc, r: bufio.NewReader(nc)}

	rep, err := c.call(&pb.Envelope{Msg: &pb.Envelope_Hello{Hello: &pb.Hello{ProtocolVersion: 1, ClientName: "go-example"}}})
	if err != nil {
		fail("hello: %v", err)
	}
	h := rep.GetHelloReply()
	fmt.Printf("hello: server %s, protocol %d, %d limits\n", h.ServerVersion, h.ProtocolVersion, len(h.ConfigLimits))

	reg := func(g *pb.RegisterGeometry) string {
		rep, err := c.call(&pb.Envelope{Msg: &pb.Envelope_RegisterGeometry{RegisterGeometry: g}})
		if err != nil {
			fail("register: %v", err)
		}
		return rep.GetRegisterReply().GeometryId
	}
	sphere := reg(&pb.RegisterGeometry{Shape: &pb.RegisterGeometry_Sphere{Sphere: &pb.Sphere{Radius: 0.1}},
		Compliance: pb.Compliance_COMPLIANCE_COMPLIANT, Modulus: 1e6, ResolutionHint: 0.05})
	plane := reg(&pb.RegisterGeometry{Shape: &pb.RegisterGeometry_HalfSpace{HalfSpace: &pb.HalfSpace{}},
		Compliance: pb.Compliance_COMPLIANCE_RIGID})
	fmt.Printf("registered: sphere %s…, half space %s…\n", sphere[:12], plane[:12])

	bodies := []*pb.Body{body(1, sphere, 0.09), body(2, plane, 0)}
	pairs := []*pb.Pair{{A: 1, B: 2}}
	rep, err = c.call(&pb.Envelope{Msg: &pb.Envelope_ContactQuery{ContactQuery: &pb.ContactQuery{Bodies: bodies, Pairs: pairs}}})
	if err != nil {
		fail("query: %v", err)
	}
	fz := rep.GetContactReply().Results[0].WrenchA.Force.Z
	fmt.Printf("query: force on the sphere %.3f N\n", fz)
	if !(fz > 0) {
		fail("no upward force: %v", fz)
	}

	rep, err = c.call(&pb.Envelope{Msg: &pb.Envelope_OpenStream{OpenStream: &pb.OpenStream{Bodies: bodies, Pairs: pairs}}})
	if err != nil {
		fail("open stream: %v", err)
	}
	sid := rep.GetOpenStreamReply().StreamId
	// The reader: results (and errors, by stream id and sequence) in order.
	type got struct {
		seq uint64
		fz  float64
		err string
		at  time.Time
	}
	results := make(chan got, *ticks)
	go func() {
		for i := 0; i < *ticks; i++ {
			env, err := readFrame(c.r)
			if err != nil {
				results <- got{err: err.Error()}
				return
			}
			if e := env.GetError(); e != nil {
				results <- got{seq: e.Sequence, err: e.Message, at: time.Now()}
			} else if r := env.GetStreamResult(); r != nil && r.StreamId == sid {
				results <- got{seq: r.Sequence, fz: r.Results[0].WrenchA.Force.Z, at: time.Now()}
			}
		}
	}()
	sent := make([]time.Time, *ticks+1)
	tick := time.NewTicker(time.Millisecond)
	start := time.Now()
	for i := 1; i <= *ticks; i++ {
		<-tick.C
		z := 0.09 + 0.005*float64(i%10)/10
		u := &pb.StreamUpdate{StreamId: sid, Sequence: uint64(i),
			Bodies: []*pb.BodyState{{BodyId: 1, Pose: &pb.Pose{Position: &pb.Vec3{Z: z}, Orientation: &pb.Quat{W: 1}}}}}
		sent[i] = time.Now()
		if err := writeFrame(c.w, &pb.Envelope{Msg: &pb.Envelope_StreamUpdate{StreamUpdate: u}}); err != nil {
			fail("update: %v", err)
		}
	}
	tick.Stop()
	lat := make([]float64, 0, *ticks)
	for i := 0; i < *ticks; i++ {
		g := <-results
		if g.err != "" {
			fail("stream update %d: %s", g.seq, g.err)
		}
		if g.seq != uint64(i+1) || !(g.fz > 0) {
			fail("result %d: sequence %d, force %v", i+1, g.seq, g.fz)
		}
		lat = append(lat, float64(g.at.Sub(sent[g.seq]).Microseconds()))
	}
	elapsed := time.Since(start).Seconds()
	sort.Float64s(lat)
	fmt.Printf("stream: %d updates in %.2f s (%.0f Hz), latency p50 %.0f us, p99 %.0f us, max %.0f us\n",
		*ticks, elapsed, float64(*ticks)/elapsed, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	rep, err = c.call(&pb.Envelope{Msg: &pb.Envelope_CloseStream{CloseStream: &pb.CloseStream{StreamId: sid}}})
	if err != nil {
		fail("close stream: %v", err)
	}
	if cs := rep.GetCloseStreamReply(); cs.Results != uint64(*ticks) {
		fail("close: %d results of %d", cs.Results, *ticks)
	}
	fmt.Println("ok")
}
