#!/usr/bin/env node
// contactd from Node.js with protobufjs (pinned by package-lock.json):
// Hello, register a sphere and a half space, one query, then a stream
// updated at 1 kHz for a second. The .proto is loaded at run time.
//
// usage: node example.js --proto proto/contactd.proto --addr unix:PATH|HOST:PORT [--ticks N]
"use strict";
const net = require("net");
const protobuf = require("protobufjs");

const arg = (name, dflt) => {
  const i = process.argv.indexOf("--" + name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const root = protobuf.loadSync(arg("proto", "proto/contactd.proto"));
const Envelope = root.lookupType("contactd.v1.Envelope");
const addr = arg("addr", "127.0.0.1:7411");
const ticks = Number(arg("ticks", "1000"));

// Framing: protobufjs writes the length prefix (encodeDelimited); a socket
// delivers bytes in arbitrary chunks, so frames are cut from a buffer.
let pending = Buffer.alloc(0);
const waiting = []; // resolvers of next()
const frames = []; // decoded envelopes not yet taken
function onData(chunk) {
  pending = Buffer.concat([pending, chunk]);
  for (;;) {
    let len = 0, shift = 0, i = 0;
    for (; i < pending.length && i < 10; i++) {
      len += (pending[i] & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(pending[i] & 0x80)) break;
    }
    if (i >= pending.length || pending.length < i + 1 + len) return; // need more
    const env = Envelope.toObject(Envelope.decode(pending.subarray(i + 1, i + 1 + len)),
                                  { longs: Number, enums: String, oneofs: true });
    env.receivedAt = process.hrtime.bigint();
    pending = pending.subarray(i + 1 + len);
    if (waiting.length) waiting.shift()(env);
    else frames.push(env);
  }
}
const next = () => (frames.length ? Promise.resolve(frames.shift()) : new Promise((r) => waiting.push(r)));
const send = (sock, obj) => sock.write(Envelope.encodeDelimited(Envelope.fromObject(obj)).finish());

function fail(msg) {
  console.error("node example: " + msg);
  process.exit(1);
}

async function main() {
  const sock = addr.startsWith("unix:") ? net.connect(addr.slice(5))
                                        : net.connect(Number(addr.split(":")[1]), addr.split(":")[0]);
  sock.setNoDelay(true);
  sock.on("data", onData);
  sock.on("error", (e) => fail(e.message));
  await new Promise((r) => sock.on("connect", r));
  let id = 0;
  async function call(req) {
    req.requestId = ++id;
    send(sock, req);
    for (;;) {
      const rep = await next();
      if (rep.msg === "registerProgress") continue;
      if (rep.error) fail(`request ${id}: ${rep.error.code}: ${rep.error.message}`);
      if (rep.requestId !== id) fail(`reply to ${rep.requestId}, expected ${id}`);
      return rep;
    }
  }
  const h = (await call({ hello: { protocolVersion: 1, clientName: "node-example" } })).helloReply;
  console.log(`hello: server ${h.serverVersion}, protocol ${h.protocolVersion}, ${h.configLimits.length} limits`);
  const sphere = (await call({ registerGeometry: { sphere: { radius: 0.1 }, compliance: "COMPLIANCE_COMPLIANT",
                                                   modulus: 1e6, resolutionHint: 0.05 } })).registerReply.geometryId;
  const plane = (await call({ registerGeometry: { halfSpace: {}, compliance: "COMPLIANCE_RIGID" } }))
    .registerReply.geometryId;
  console.log(`registered: sphere ${sphere.slice(0, 12)}…, half space ${plane.slice(0, 12)}…`);
  const body = (bodyId, geometryId, z) => ({ bodyId, geometryId, pose: { position: { z }, orientation: { w: 1 } } });
  const bodies = [body(1, sphere, 0.09), body(2, plane, 0)];
  const pairs = [{ a: 1, b: 2 }];
  const q = (await call({ contactQuery: { bodies, pairs } })).contactReply;
  const fz = q.results[0].wrenchA.force.z;
  console.log(`query: force on the sphere ${fz.toFixed(3)} N`);
  if (!(fz > 0)) fail(`no upward force: ${fz}`);

  const sid = (await call({ openStream: { bodies, pairs } })).openStreamReply.streamId;
  const sent = new Array(ticks + 1);
  const start = process.hrtime.bigint();
  // 1 kHz: each update at its tick (setTimeout is coarse, so wait on the clock)
  let seq = 0;
  await new Promise((resolve) => {
    const tick = () => {
      while (seq < ticks && process.hrtime.bigint() >= start + BigInt(seq + 1) * 1000000n) {
        seq++;
        const z = 0.09 + (0.005 * (seq % 10)) / 10;
        sent[seq] = process.hrtime.bigint();
        send(sock, { streamUpdate: { streamId: sid, sequence: seq,
                                     bodies: [{ bodyId: 1, pose: { position: { z }, orientation: { w: 1 } } }] } });
      }
      if (seq < ticks) setImmediate(tick);
      else resolve();
    };
    tick();
  });
  const lat = [];
  for (let i = 1; i <= ticks; i++) {
    const r = await next();
    if (r.error) fail(`stream ${r.error.streamId} update ${r.error.sequence}: ${r.error.message}`);
    const res = r.streamResult;
    if (!res || res.streamId !== sid || res.sequence !== i || !(res.results[0].wrenchA.force.z > 0))
      fail(`result ${i}: ${JSON.stringify(r).slice(0, 200)}`);
    lat.push(Number(r.receivedAt - sent[i]) / 1000);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  lat.sort((a, b) => a - b);
  console.log(`stream: ${ticks} updates in ${secs.toFixed(2)} s (${(ticks / secs).toFixed(0)} Hz), ` +
              `latency p50 ${lat[lat.length >> 1].toFixed(0)} us, ` +
              `p99 ${lat[Math.floor(lat.length * 0.99)].toFixed(0)} us`);
  const cs = (await call({ closeStream: { streamId: sid } })).closeStreamReply;
  if (cs.results !== ticks) fail(`close: ${cs.results} results of ${ticks}`);
  console.log("ok");
  sock.end();
}
main().catch((e) => fail(e.stack || String(e)));
