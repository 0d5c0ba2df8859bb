// A Sparkplug B edge node built on Eclipse Tahu's JavaScript client (sparkplug-client from
// the npm registry), configured with sewerwatch as its primary host: it publishes only
// while the host's STATE says online, keeps what it measures while the host is away, and
// sends that as historical metrics after its new births when the host is back (Sparkplug
// 3.0, "Edge Node Session Establishment"). Its device "probe" reports pH (Double) and four
// temperatures (Int8, Int16, Int32, Int64, often negative); DDATA carries aliases only,
// some payloads compressed (DEFLATE, GZIP); a rebirth request (NCMD) is answered with new
// births; optionally one sequence number is skipped, as if a message had been lost.
//
//   node tahu_edge.js '{"url": "mqtt://...", "username": ..., "password": ..., "group": ...,
//                       "node": ..., "hostId": "sewerwatch", "samples": 400, "rate": 40,
//                       "skipSeqAt": 390}'
//
// Prints one JSON line at the end: every value published, the ones sent in the message
// after the skipped sequence number, and counts of what was done.
'use strict';
const sparkplug = require('sparkplug-client');
const mqtt = require('mqtt');

const cfg = JSON.parse(process.argv[2]);
const DEVICE = cfg.device || 'probe';
const METRICS = [            // name, alias, Sparkplug type, value of sample i
  ['pH', 1, 'Double', (i) => 6.5 + (i % 50) / 100],
  ['T8', 2, 'Int8', (i) => -40 + (i % 80)],
  ['T16', 3, 'Int16', (i) => -1 - (i % 30)],
  ['T32', 4, 'Int32', (i) => (i % 2 ? -1 : 1) * (i % 40)],
  ['T64', 5, 'Int64', (i) => -(i % 40)],
];

let lastTs = 0;
function stamp() {                    // strictly increasing [ms], one per sample or birth
  lastTs = Math.max(Date.now(), lastTs + 1);
  return lastTs;
}

const published = [];                 // [metric, ts, value] of everything sent
const inGap = [];                     // those sent in the message after the skipped seq
const counts = { messages: 0, births: 0, historical_messages: 0, compressed: 0, rebirth_requests: 0,
                 host_offline: 0, host_online: 0, buffered_max: 0,
                 longest_session: 0 };
let sinceBirth = 0;                   // messages since the last NBIRTH (seq wraps after 255)
function sent(n) { counts.messages += n; sinceBirth += n; counts.longest_session = Math.max(counts.longest_session, sinceBirth); }
let hostOnline = false, hostTs = -1, born = false, connected = false, skipped = false;
const buffer = [];                    // samples taken while the host was away: [i, ts]
let produced = 0, live = 0;

const client = sparkplug.newClient({
  serverUrl: cfg.url, username: cfg.username, password: cfg.password, groupId: cfg.group,
  edgeNode: cfg.node, clientId: cfg.node + '-tahu', publishDeath: true, version: 'spBv1.0',
});

function metricsOf(i, ts, opts) {
  return METRICS.map(([name, alias, type, f]) => {
    const m = { alias, type, value: f(i), timestamp: ts };
    if (opts.names) m.name = name;
    if (opts.historical) m.isHistorical = true;
    return m;
  });
}

function record(i, ts, target) {
  for (const [name, , , f] of METRICS) target.push([name, ts, f(i)]);
}

function births() {
  const ts = stamp();
  client.publishNodeBirth({ timestamp: ts, metrics: [{ name: 'Node Control/Rebirth', type: 'Boolean', value: false }] });
  const i = produced;                   // the birth carries the current values: readings too
  client.publishDeviceBirth(DEVICE, { timestamp: ts, metrics: metricsOf(i, ts, { names: true }) });
  record(i, ts, published);
  counts.births += 1;
  sinceBirth = 0;
  sent(2);
  born = true;
}

function sendHistory() {
  while (buffer.length) {
    const chunk = buffer.splice(0, 20);
    const metrics = [];
    for (const [i, ts] of chunk) {
      metrics.push(...metricsOf(i, ts, { historical: true }));
      record(i, ts, published);
    }
    client.publishDeviceData(DEVICE, { timestamp: stamp(), metrics });
    counts.historical_messages += 1;
    sent(1);
  }
}

client.on('birth', () => {
  connected = true;
  if (hostOnline) { births(); sendHistory(); }
});
client.on('ncmd', (payload) => {
  for (const m of payload.metrics || []) {
    if (m.name === 'Node Control/Rebirth' && m.value === true) {
      counts.rebirth_requests += 1;
      if (connected && hostOnline) births();
    }
  }
});

// The primary host's STATE, on a connection of its own (Tahu's client decodes every message
// it gets as protobuf, and STATE is JSON).
// With an account of its own where the broker makes each account one connection.
const watcher = mqtt.connect(cfg.url, { username: cfg.watcherUsername || cfg.username,
                                        password: cfg.watcherPassword || cfg.password,
                                        clientId: cfg.node + '-state', clean: true });
watcher.on('connect', () => watcher.subscribe('spBv1.0/STATE/' + cfg.hostId, { qos: 1 }));
watcher.on('message', (topic, message) => {
  let st;
  try { st = JSON.parse(message.toString()); } catch (e) { return; }
  if (typeof st.online !== 'boolean' || typeof st.timestamp !== 'number' || st.timestamp < hostTs) return;
  hostTs = st.timestamp;
  if (st.online && !hostOnline) {
    hostOnline = true;
    counts.host_online += 1;
    if (connected) { births(); sendHistory(); }     // a new host session: new births, then the history
  } else if (!st.online && hostOnline) {
    hostOnline = false;
    born = false;
    counts.host_offline += 1;
  }
});

function sample() {
  if (produced >= cfg.samples) return finish();
  const i = produced++;
  const ts = stamp();
  if (!(connected && hostOnline && born)) {
    buffer.push([i, ts]);
    counts.buffered_max = Math.max(counts.buffered_max, buffer.length);
    return;
  }
  const options = {};
  live += 1;
  if (live % 7 === 0) { options.compress = true; options.algorithm = 'DEFLATE'; }
  else if (live % 11 === 0) { options.compress = true; options.algorithm = 'GZIP'; }
  if (options.compress) counts.compressed += 1;
  let target = published;
  if (cfg.skipSeqAt !== undefined && i >= cfg.skipSeqAt && !skipped) {
    client.seq += 1;                  // as if the message before this one had been lost
    skipped = true;
    target = inGap;
  }
  client.publishDeviceData(DEVICE, { timestamp: ts, metrics: metricsOf(i, ts, {}) }, options);
  record(i, ts, target);
  sent(1);
}

let timer = null, finishing = false;
function finish() {
  if (finishing) return;
  if (buffer.length) return;          // the host is away: wait for it, then the history goes out
  finishing = true;
  clearInterval(timer);
  setTimeout(() => {
    client.publishDeviceDeath(DEVICE, { timestamp: stamp(), metrics: [] });
    sent(1);
    setTimeout(() => {
      client.stop();                  // NDEATH (publishDeath), then the connection ends
      watcher.end();
      process.stdout.write(JSON.stringify({ published, in_gap: inGap, counts }) + '\n');
      setTimeout(() => process.exit(0), 200);
    }, 300);
  }, 300);
}

timer = setInterval(sample, 1000 / cfg.rate);
setTimeout(() => { process.stderr.write('tahu_edge: timed out\n'); process.exit(3); }, (cfg.timeout_s || 120) * 1000);
