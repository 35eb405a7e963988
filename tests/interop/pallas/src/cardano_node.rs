//! Role `cardano-node` (pallas-network 1.x only): a stand-in cardano-node for the node's link.
//!
//! It listens on `--socket`, accepts each client with pallas's `NodeServer` (node-to-client
//! handshake, V10 and later, `--magic`), and answers local state query with pallas's
//! `localstate::Server` from the chain described in the JSON file `--chain`:
//!
//! ```json
//! {"era": 6, "epoch": 30,
//!  "system_start": {"year": 2022, "day_of_year": 167, "picoseconds_of_day": 29059000000000000},
//!  "pools": {"<pool id hex>": {"mark": 1, "set": 2, "go": 3}},
//!  "era_history": [{"start": [0, 0, 0], "end": null,
//!                   "params": {"epoch_size": 500, "slot_length_ms": 1000, "safe_zone": 3000, "genesis_window": 3000}}]}
//! ```
//!
//! The queries are decoded with pallas's `queries_v16::Request`, and the system start, the
//! era, the epoch and the stake snapshots are encoded by pallas's own types (`SystemStart`,
//! `Era`, `Epoch`, `StakeSnapshots`); a `QueryIfCurrent` answer is the one-item array pallas's
//! client expects (`(value,)`). pallas has no type for the era history (`GetInterpreter`), so
//! that one answer is written here with minicbor (pallas's re-export), in the shape
//! ouroboros-consensus gives it: an indefinite list of `[start, end, params]`.
//!
//! Every acquire, query and release is printed as a JSON line; a query this stand-in cannot
//! answer is reported (`"event": "error"`) and ends that connection, as an unknown query
//! ends it in cardano-node.

use std::rc::Rc;

use pallas_codec_1::minicbor;
use pallas_codec_1::utils::{AnyCbor, Bytes, Int, KeyValuePairs};
use pallas_network_1::facades::NodeServer;
use pallas_network_1::miniprotocols::localstate::queries_v16::{
    BigInt, BlockQuery, Epoch, Era, HardForkQuery, LedgerQuery, Request, StakeSnapshots, Stakes, SystemStart,
};
use pallas_network_1::miniprotocols::localstate::ClientQueryRequest;
use serde_json::{json, Value};

use crate::args::Args;
use crate::output::{emit, hex};

/// The chain state the answers come from, read once from `--chain`.
struct Chain {
    era: Era,
    epoch: Epoch,
    system_start: (i64, i64, i64),
    /// Pool id and its (mark, set, go) stake, in the file's order.
    pools: Vec<(Vec<u8>, [u64; 3])>,
    /// The `GetInterpreter` answer, encoded once.
    era_history: Vec<u8>,
}

pub async fn run(args: &Args) -> Result<(), String> {
    let socket = args.required("socket")?.to_string();
    let magic: u64 = args.required("magic")?.parse().map_err(|_| "--magic: not a number".to_string())?;
    let path = args.required("chain")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("--chain {path}: {e}"))?;
    let description: Value = serde_json::from_str(&text).map_err(|e| format!("--chain {path}: {e}"))?;
    let chain = Rc::new(Chain::from_json(&description).map_err(|e| format!("--chain {path}: {e}"))?);
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).map_err(|e| format!("bind {socket}: {e}"))?;
    emit(json!({"event": "listening", "socket": socket}));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let mut connection = 0u64;
            loop {
                match NodeServer::accept(&listener, magic).await {
                    Ok(server) => {
                        connection += 1;
                        let version = server.accepted_version().map(|(number, data)| json!([number, format!("{data:?}")]));
                        emit(json!({"event": "connection", "connection": connection, "version": version}));
                        tokio::task::spawn_local(serve(server, connection, chain.clone()));
                    }
                    Err(e) => emit(json!({"event": "error", "stage": "accept", "detail": format!("{e:?}")})),
                }
            }
        })
        .await
}

/// Acquire, queries, release, for as long as the client keeps the connection.
async fn serve(mut server: NodeServer, connection: u64, chain: Rc<Chain>) {
    let statequery = server.statequery();
    let ended = loop {
        match statequery.recv_while_idle().await {
            Ok(Some(target)) => emit(json!({"event": "acquire", "connection": connection, "point": format!("{:?}", target.0)})),
            Ok(None) => break json!({"event": "done", "connection": connection}),
            Err(e) => break json!({"event": "ended", "connection": connection, "detail": format!("{e:?}")}),
        }
        if let Err(e) = statequery.send_acquired().await {
            break json!({"event": "error", "stage": "acquired", "connection": connection, "detail": format!("{e:?}")});
        }
        let outcome = loop {
            match statequery.recv_while_acquired().await {
                Ok(ClientQueryRequest::Query(query)) => {
                    let (name, answer) = match answer(&chain, &query) {
                        Ok(found) => found,
                        Err(detail) => {
                            break Err(json!({"event": "error", "stage": "query", "connection": connection,
                                              "query": hex(&query), "detail": detail}))
                        }
                    };
                    emit(json!({"event": "query", "connection": connection, "query": name, "result": hex(&answer)}));
                    if let Err(e) = statequery.send_result(AnyCbor::from_raw_bytes(answer)).await {
                        break Err(json!({"event": "error", "stage": "result", "connection": connection, "detail": format!("{e:?}")}));
                    }
                }
                Ok(ClientQueryRequest::ReAcquire(point)) => {
                    emit(json!({"event": "acquire", "connection": connection, "point": format!("{point:?}")}));
                    if let Err(e) = statequery.send_acquired().await {
                        break Err(json!({"event": "error", "stage": "acquired", "connection": connection, "detail": format!("{e:?}")}));
                    }
                }
                Ok(ClientQueryRequest::Release) => break Ok(()),
                Err(e) => break Err(json!({"event": "ended", "connection": connection, "detail": format!("{e:?}")})),
            }
        };
        match outcome {
            Ok(()) => emit(json!({"event": "release", "connection": connection})),
            Err(event) => break event,
        }
    };
    emit(ended);
    server.abort().await;
}

/// The query's name and its answer's bytes, or why the stand-in cannot answer it.
fn answer(chain: &Chain, query: &[u8]) -> Result<(&'static str, Vec<u8>), String> {
    let request: Request = minicbor::decode(query).map_err(|e| format!("pallas cannot decode the query: {e}"))?;
    let encoded = |name: &'static str, bytes: Result<Vec<u8>, String>| bytes.map(|bytes| (name, bytes));
    match request {
        Request::GetSystemStart => encoded("GetSystemStart", to_vec(&chain.system_start())),
        Request::LedgerQuery(LedgerQuery::HardForkQuery(HardForkQuery::GetCurrentEra)) => {
            encoded("GetCurrentEra", to_vec(&chain.era))
        }
        Request::LedgerQuery(LedgerQuery::HardForkQuery(HardForkQuery::GetInterpreter)) => {
            Ok(("GetInterpreter", chain.era_history.clone()))
        }
        Request::LedgerQuery(LedgerQuery::BlockQuery(era, query)) if era != chain.era => {
            Err(format!("{query:?} for era {era}, but the ledger is in era {}", chain.era))
        }
        Request::LedgerQuery(LedgerQuery::BlockQuery(_, BlockQuery::GetEpochNo)) => {
            encoded("GetEpochNo", to_vec(&(chain.epoch,)))
        }
        Request::LedgerQuery(LedgerQuery::BlockQuery(_, BlockQuery::GetStakeSnapshots(_))) => {
            encoded("GetStakeSnapshots", to_vec(&(chain.stake_snapshots(),)))
        }
        other => Err(format!("not answered by this stand-in: {other:?}")),
    }
}

fn to_vec<T: minicbor::Encode<()>>(value: &T) -> Result<Vec<u8>, String> {
    minicbor::to_vec(value).map_err(|e| format!("encoding: {e}"))
}

impl Chain {
    fn from_json(description: &Value) -> Result<Self, String> {
        let start = &description["system_start"];
        let pools = description["pools"]
            .as_object()
            .ok_or("\"pools\" must be an object")?
            .iter()
            .map(|(id, stake)| {
                let id = hex::decode(id).map_err(|e| format!("pool id {id:?}: {e}"))?;
                let column = |name: &str| uint(&stake[name], &format!("pool stake {name}"));
                Ok((id, [column("mark")?, column("set")?, column("go")?]))
            })
            .collect::<Result<Vec<_>, String>>()?;
        for column in 0..3 {
            pools.iter().try_fold(0u64, |total, (_, stake)| total.checked_add(stake[column]))
                .ok_or("a snapshot's total stake must fit in 64 bits")?;
        }
        let era_history = encode_era_history(&description["era_history"])?;
        let int = |value: &Value, what: &str| value.as_i64().ok_or_else(|| format!("{what} must be an integer"));
        Ok(Self {
            era: u16::try_from(uint(&description["era"], "era")?).map_err(|_| "era out of range")?,
            epoch: uint(&description["epoch"], "epoch")?,
            system_start: (
                int(&start["year"], "system_start.year")?,
                int(&start["day_of_year"], "system_start.day_of_year")?,
                int(&start["picoseconds_of_day"], "system_start.picoseconds_of_day")?,
            ),
            pools,
            era_history,
        })
    }

    fn system_start(&self) -> SystemStart {
        let (year, day_of_year, picoseconds_of_day) = self.system_start;
        SystemStart {
            year: BigInt::Int(Int::from(year)),
            day_of_year,
            picoseconds_of_day: BigInt::Int(Int::from(picoseconds_of_day)),
        }
    }

    fn stake_snapshots(&self) -> StakeSnapshots {
        let total = |column: usize| self.pools.iter().map(|(_, stake)| stake[column]).sum();
        StakeSnapshots {
            stake_snapshots: KeyValuePairs::Def(
                self.pools
                    .iter()
                    .map(|(id, [mark, set, go])| {
                        (Bytes::from(id.clone()), Stakes { snapshot_mark_pool: *mark, snapshot_set_pool: *set, snapshot_go_pool: *go })
                    })
                    .collect(),
            ),
            snapshot_stake_mark_total: total(0),
            snapshot_stake_set_total: total(1),
            snapshot_stake_go_total: total(2),
        }
    }
}

fn uint(value: &Value, what: &str) -> Result<u64, String> {
    value.as_u64().ok_or_else(|| format!("{what} must be a non-negative integer"))
}

/// The era history as ouroboros-consensus writes it (`HardFork/History/Summary.hs`,
/// `EraParams.hs`); written by hand because pallas has no type for it.
fn encode_era_history(eras: &Value) -> Result<Vec<u8>, String> {
    let eras = eras.as_array().ok_or("\"era_history\" must be a list")?;
    let mut encoder = minicbor::Encoder::new(Vec::new());
    let failed = |e: minicbor::encode::Error<std::convert::Infallible>| format!("era history: {e}");
    encoder.begin_array().map_err(failed)?;
    for era in eras {
        encoder.array(3).map_err(failed)?;
        bound(&mut encoder, &era["start"], "start")?;
        if era["end"].is_null() {
            encoder.null().map_err(failed)?;
        } else {
            bound(&mut encoder, &era["end"], "end")?;
        }
        let params = &era["params"];
        let field = |name: &str| uint(&params[name], &format!("era params {name}"));
        encoder
            .array(4).map_err(failed)?
            .u64(field("epoch_size")?).map_err(failed)?
            .u64(field("slot_length_ms")?).map_err(failed)?
            // StandardSafeZone: [0, slots, [0]] (the trailing [0] is the obsolete "safe before epoch").
            .array(3).map_err(failed)?
            .u8(0).map_err(failed)?
            .u64(field("safe_zone")?).map_err(failed)?
            .array(1).map_err(failed)?
            .u8(0).map_err(failed)?
            .u64(field("genesis_window")?).map_err(failed)?;
    }
    encoder.end().map_err(failed)?;
    Ok(encoder.into_writer())
}

/// `[relativeTime (picoseconds), slot, epoch]`.
fn bound(encoder: &mut minicbor::Encoder<Vec<u8>>, value: &Value, what: &str) -> Result<(), String> {
    let items = value.as_array().filter(|items| items.len() == 3).ok_or_else(|| format!("era {what} must be [time_ps, slot, epoch]"))?;
    let failed = |e: minicbor::encode::Error<std::convert::Infallible>| format!("era history: {e}");
    encoder.array(3).map_err(failed)?;
    for item in items {
        encoder.u64(uint(item, &format!("era {what}"))?).map_err(failed)?;
    }
    Ok(())
}
