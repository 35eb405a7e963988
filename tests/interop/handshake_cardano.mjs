// Propose Cardano node-to-client versions (V16..V19) with the package's own
// Multiplexer and HandshakeClient, and report what the server answered.
// Usage: node handshake_cardano.mjs ENDPOINT MAGIC
import net from "node:net";
import {
  HandshakeClient,
  HandshakeRefuse,
  Multiplexer,
  VersionData,
} from "@harmoniclabs/ouroboros-miniprotocols-ts";
import { endpoint, hex, report } from "./peer.mjs";

const [spec, magicArg] = process.argv.slice(2);
const magic = Number(magicArg);
const socket = net.connect(endpoint(spec));
let peerClosed = false;
let mplexer;
const onPeerClose = () => {
  peerClosed = true;
  // The package's multiplexer reconnects when its socket closes: detach it first.
  mplexer?.close({ closeSocket: false });
};
socket.on("end", onPeerClose);
socket.on("close", onPeerClose);

mplexer = new Multiplexer({ protocolType: "node-to-client", connect: () => socket });
const sent = [];
mplexer.on("send", (payload, header) => sent.push({ protocol: header.protocol, payload: hex(payload) }));
mplexer.on("error", (err) => report({ error: String(err) }));

// The package proposes its default node-to-client versions, V16..V19, for one
// VersionData (a table map argument is rejected by its own isVersionTableMap check).
// It writes N2C data as [magic, initiatorOnlyDiffusionMode]: false stands for query = false.
const data = new VersionData({ networkMagic: magic, initiatorOnlyDiffusionMode: false, query: false },
  { includePeerSharing: false, includeQuery: true });
const client = new HandshakeClient(mplexer);
const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no handshake reply in 5 s")), 5000).unref());
const reply = await Promise.race([client.propose(data), timeout]);
mplexer.close({ closeSocket: false });
const deadline = Date.now() + 3000;
while (!peerClosed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
report({
  sent,
  replyType: reply.constructor.name,
  reply: hex(reply.cborBytes),
  validVersions: reply instanceof HandshakeRefuse ? reply.reason.validVersions?.map(Number) : null,
  peerClosed,
});
socket.destroy();
client.terminate();
