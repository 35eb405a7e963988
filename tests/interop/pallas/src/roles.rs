//! The three roles, written once and expanded for each pallas-network release line.
//!
//! Each version module names its crates (`pallas_network_*`, `pallas_codec_*`) and supplies
//! what differs between the lines: `message_id` and `LAYOUT` (1.x carries the id beside the
//! payload, 0.34/0.35 inside it), `reject_json` and `reject_of` (0.35 and 1.x have structured
//! reject reasons, 0.34 a bare text). The roles use the public API the way
//! `internal/mithril-dmq` does: `DmqClient::connect`, `msg_submission().send_submit_tx`,
//! `recv_submit_tx_response`, `terminate_gracefully`; `msg_notification()` with a request sent
//! only when the protocol is idle, then `recv_next_reply`; `DmqServer::accept` for the server.

/// Expands to `pub async fn run(role, args)` for the pallas crates `$net` and `$codec`.
macro_rules! dmq_roles {
    ($net:ident, $codec:ident) => {
        use std::collections::HashSet;
        use std::rc::Rc;
        use std::cell::Cell;
        use std::time::Duration;

        use $codec::minicbor;
        use $net::facades::{DmqClient, DmqServer};
        use $net::miniprotocols::localmsgnotification::{self, Reply, State};
        use $net::miniprotocols::localmsgsubmission::{DmqMsg, DmqMsgOperationalCertificate, DmqMsgValidationError};
        use $net::miniprotocols::localtxsubmission::{Request, Response};
        use serde_json::{json, Value};
        use tokio::io::AsyncBufReadExt;

        use crate::args::Args;
        use crate::output::{emit, hex};

        pub async fn run(role: &str, args: &Args) -> Result<(), String> {
            match role {
                "signer" => signer(args).await,
                "aggregator" => aggregator(args).await,
                "server" => server(args).await,
                other => Err(format!("unknown role {other:?} (signer, aggregator or server)")),
            }
        }

        fn socket_and_magic(args: &Args) -> Result<(String, u64), String> {
            let socket = args.required("socket")?.to_string();
            args.required("magic")?;
            Ok((socket, args.number("magic", 0u64)?))
        }

        fn opcert_json(c: &DmqMsgOperationalCertificate) -> Value {
            json!({
                "kes_vk": hex(&c.kes_vk),
                "issue_number": c.issue_number,
                "start_kes_period": c.start_kes_period,
                "cert_sig": hex(&c.cert_sig),
            })
        }

        /// What pallas decoded, field by field, and its own encoding of it (`cbor`).
        fn message_json(m: &DmqMsg) -> Value {
            json!({
                "layout": LAYOUT,
                "cbor": hex(&minicbor::to_vec(m).expect("encoding into a Vec cannot fail")),
                "msg_id": hex(message_id(m)),
                "body": hex(&m.msg_payload.msg_body),
                "kes_period": m.msg_payload.kes_period,
                "expires_at": m.msg_payload.expires_at,
                "kes_signature": hex(&m.kes_signature),
                "opcert": opcert_json(&m.operational_certificate),
                "cold_vk": hex(&m.cold_verification_key),
            })
        }

        fn with(mut value: Value, extra: Value) -> Value {
            if let (Value::Object(target), Value::Object(source)) = (&mut value, extra) {
                target.extend(source);
            }
            value
        }

        fn decode_hex_message(text: &str) -> Result<DmqMsg, String> {
            let raw = hex::decode(text.trim()).map_err(|e| format!("not hex: {e}"))?;
            minicbor::decode::<DmqMsg>(&raw).map_err(|e| format!("pallas cannot decode the message: {e}"))
        }

        // ---- signer: one connection per message, as DmqPublisherClientPallas -------------

        /// How the signer uses connections (`--connection`).
        #[derive(Clone, Copy, PartialEq)]
        enum Connection {
            /// One per message, MsgDone, then `abort` tears it down.
            PerMessage,
            /// One for every message, MsgDone at the end.
            Shared,
            /// `DmqPublisherClientPallas::publish_message` exactly: one per message, MsgDone,
            /// `abort` only if MsgDone failed, then the client is dropped. The dropped client's
            /// plexer tasks live on in this process and keep the socket open.
            Mithril,
        }

        /// Reads signed messages (hex, one per line) on standard input; for each one prints the
        /// verdict as pallas decoded it, or the stage that failed, and how many descriptors this
        /// process holds after it (`fds`). `--connection shared` submits them all on one
        /// connection (MsgDone at the end); `mithril` is Mithril's publisher (see [`Connection`]).
        /// `--pace-ms N` starts publications at least N ms apart.
        async fn signer(args: &Args) -> Result<(), String> {
            let (socket, magic) = socket_and_magic(args)?;
            let mode = match args.get("connection").unwrap_or("per-message") {
                "per-message" => Connection::PerMessage,
                "shared" => Connection::Shared,
                "mithril" => Connection::Mithril,
                other => return Err(format!("--connection: per-message, shared or mithril, not {other:?}")),
            };
            let shared = mode == Connection::Shared;
            // `--pace-ms`: publications start at least this far apart (0: back to back).
            let pace = Duration::from_millis(args.number("pace-ms", 0)?);
            let mut next_start = tokio::time::Instant::now();
            let mut client: Option<DmqClient> = None;
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
                if line.trim().is_empty() {
                    continue;
                }
                if !pace.is_zero() {
                    tokio::time::sleep_until(next_start).await;
                    next_start = tokio::time::Instant::now() + pace;
                }
                let message = match decode_hex_message(&line) {
                    Ok(message) => message,
                    Err(detail) => {
                        emit(json!({"error": "decode", "detail": detail}));
                        continue;
                    }
                };
                let sent = hex(&minicbor::to_vec(&message).expect("encoding into a Vec cannot fail"));
                if client.is_none() {
                    match DmqClient::connect(&socket, magic).await {
                        Ok(fresh) => client = Some(fresh),
                        Err(e) => {
                            emit(json!({"error": "connect", "detail": format!("{e:?}"), "sent": sent}));
                            continue;
                        }
                    }
                }
                let current = client.as_mut().expect("connected above");
                let verdict = submit(current, message).await;
                let done = if shared && verdict.is_ok() {
                    Ok(())
                } else if mode == Connection::Mithril {
                    leave(client.take().expect("connected above")).await
                } else {
                    finish(client.take().expect("connected above")).await
                };
                let result = match (verdict, done) {
                    (Ok(Response::Accepted), done) => json!({"verdict": "accepted", "sent": sent, "done_error": done.err()}),
                    (Ok(Response::Rejected(reason)), done) => json!({
                        "verdict": "rejected", "reason": reject_json(&reason), "sent": sent, "done_error": done.err(),
                    }),
                    (Err((stage, detail)), _) => json!({"error": stage, "detail": detail, "sent": sent}),
                };
                emit(with(result, json!({"fds": open_descriptors()})));
            }
            if let Some(open) = client {
                if let Err(detail) = finish(open).await {
                    emit(json!({"error": "done", "detail": detail}));
                }
            }
            Ok(())
        }

        async fn submit(client: &mut DmqClient, message: DmqMsg) -> Result<Response<DmqMsgValidationError>, (&'static str, String)> {
            let submission = client.msg_submission();
            submission.send_submit_tx(message).await.map_err(|e| ("submit", format!("{e:?}")))?;
            submission.recv_submit_tx_response().await.map_err(|e| ("verdict", format!("{e:?}")))
        }

        /// MsgDone when the protocol is idle, then the connection is torn down.
        async fn finish(mut client: DmqClient) -> Result<(), String> {
            let done = client.msg_submission().terminate_gracefully().await.map_err(|e| format!("{e:?}"));
            client.abort().await;
            done
        }

        /// As `DmqPublisherClientPallas::publish_message`: MsgDone, `abort` only when that
        /// failed; otherwise the client is simply dropped.
        async fn leave(mut client: DmqClient) -> Result<(), String> {
            match client.msg_submission().terminate_gracefully().await {
                Ok(()) => {
                    drop(client);
                    Ok(())
                }
                Err(e) => {
                    client.abort().await;
                    Err(format!("{e:?}"))
                }
            }
        }

        /// The descriptors this process holds (Linux: the entries of /proc/self/fd, less the
        /// one the listing itself opens); None where that cannot be read.
        fn open_descriptors() -> Option<usize> {
            std::fs::read_dir("/proc/self/fd").ok().map(|entries| entries.count().saturating_sub(1))
        }

        // ---- aggregator: one cached connection, as DmqConsumerClientPallas ---------------

        /// Requests messages (`--mode blocking` as Mithril, or `non-blocking`), de-duplicates
        /// them by body (`--dedupe off` shows every copy), drops the connection on any error and
        /// opens a new one after `--reconnect-ms`; exits after `--expect` new messages.
        async fn aggregator(args: &Args) -> Result<(), String> {
            let (socket, magic) = socket_and_magic(args)?;
            let blocking = match args.get("mode").unwrap_or("blocking") {
                "blocking" => true,
                "non-blocking" => false,
                other => return Err(format!("--mode: blocking or non-blocking, not {other:?}")),
            };
            let dedupe = args.get("dedupe") != Some("off");
            let expect: usize = args.number("expect", 0)?;
            let reconnect = Duration::from_millis(args.number("reconnect-ms", 100)?);
            let mut seen: HashSet<Vec<u8>> = HashSet::new();
            let mut delivered = 0usize;
            let mut connection = 0u64;
            let mut client: Option<DmqClient> = None;
            while expect == 0 || delivered < expect {
                let current = match client.as_mut() {
                    Some(current) => current,
                    None => match DmqClient::connect(&socket, magic).await {
                        Ok(fresh) => {
                            connection += 1;
                            emit(json!({"event": "connected", "connection": connection}));
                            client.insert(fresh)
                        }
                        Err(e) => {
                            emit(json!({"event": "error", "stage": "connect", "detail": format!("{e:?}")}));
                            tokio::time::sleep(reconnect).await;
                            continue;
                        }
                    },
                };
                match next_reply(current, blocking).await {
                    Ok(Reply(messages, has_more)) => {
                        let mut fresh = 0;
                        for message in &messages {
                            if !dedupe || seen.insert(message.msg_payload.msg_body.clone()) {
                                fresh += 1;
                                delivered += 1;
                                emit(with(message_json(message), json!({"event": "message", "connection": connection})));
                            }
                        }
                        emit(json!({
                            "event": "reply", "connection": connection, "messages": messages.len(),
                            "new": fresh, "has_more": has_more,
                        }));
                        if !blocking && messages.is_empty() && !has_more {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                    Err(detail) => {
                        emit(json!({"event": "error", "stage": "notification", "detail": detail, "connection": connection}));
                        if let Some(broken) = client.take() {
                            broken.abort().await;
                        }
                        tokio::time::sleep(reconnect).await;
                    }
                }
            }
            emit(json!({"event": "done", "delivered": delivered, "connections": connection}));
            if let Some(open) = client {
                open.abort().await;
            }
            Ok(())
        }

        async fn next_reply(client: &mut DmqClient, blocking: bool) -> Result<Reply, String> {
            let notification = client.msg_notification();
            if *notification.state() == State::Idle {
                let sent = if blocking {
                    notification.send_request_messages_blocking().await
                } else {
                    notification.send_request_messages_non_blocking().await
                };
                sent.map_err(|e| format!("request: {e:?}"))?;
            }
            notification.recv_next_reply().await.map_err(|e| format!("reply: {e:?}"))
        }

        // ---- server: pallas's DmqServer, for checking the project's client library -------

        /// Serves protocols 14 and 15 on `--socket`. Submissions get the `--verdict` specs in
        /// order of arrival over all connections (the last one repeats; `accepted` if none);
        /// each connection is notified of the `--notify` messages (hex), then waits.
        async fn server(args: &Args) -> Result<(), String> {
            let (socket, magic) = socket_and_magic(args)?;
            let verdicts: Vec<String> = args.all("verdict").to_vec();
            for spec in &verdicts {
                verdict_of(spec)?;
            }
            let notify = args.all("notify").iter().map(|text| decode_hex_message(text)).collect::<Result<Vec<_>, _>>()?;
            let _ = std::fs::remove_file(&socket);
            let listener = tokio::net::UnixListener::bind(&socket).map_err(|e| format!("bind {socket}: {e}"))?;
            emit(json!({"event": "listening", "socket": socket}));
            let shared = Rc::new((verdicts, notify, Cell::new(0usize)));
            let local = tokio::task::LocalSet::new();
            local
                .run_until(async move {
                    let mut connection = 0u64;
                    loop {
                        match DmqServer::accept(&listener, magic).await {
                            Ok(accepted) => {
                                connection += 1;
                                let version = accepted.accepted_version().map(|(number, data)| json!([number, format!("{data:?}")]));
                                emit(json!({"event": "connection", "connection": connection, "version": version}));
                                tokio::task::spawn_local(serve(accepted, connection, shared.clone()));
                            }
                            Err(e) => emit(json!({"event": "error", "stage": "accept", "detail": format!("{e:?}")})),
                        }
                    }
                })
                .await
        }

        fn verdict_of(spec: &str) -> Result<Response<DmqMsgValidationError>, String> {
            if spec == "accepted" {
                Ok(Response::Accepted)
            } else {
                reject_of(spec).map(Response::Rejected)
            }
        }

        async fn serve(mut server: DmqServer, connection: u64, shared: Rc<(Vec<String>, Vec<DmqMsg>, Cell<usize>)>) {
            let (verdicts, notify, submitted) = &*shared;
            let submission = &mut server.msg_submission;
            let notification = &mut server.msg_notification;
            let submissions = async {
                loop {
                    match submission.recv_next_request().await {
                        Ok(Request::Submit(message)) => {
                            let index = submitted.get();
                            submitted.set(index + 1);
                            let spec = verdicts.get(index).or(verdicts.last()).map(String::as_str).unwrap_or("accepted");
                            emit(with(message_json(&message), json!({
                                "event": "submit", "connection": connection, "verdict": spec,
                            })));
                            let verdict = verdict_of(spec).expect("checked at start");
                            if let Err(e) = submission.send_submit_tx_response(verdict).await {
                                emit(json!({"event": "error", "stage": "verdict", "connection": connection, "detail": format!("{e:?}")}));
                                return;
                            }
                        }
                        Ok(Request::Done) => {
                            emit(json!({"event": "done", "protocol": "submission", "connection": connection}));
                            return;
                        }
                        Err(e) => {
                            emit(json!({"event": "ended", "protocol": "submission", "connection": connection, "detail": format!("{e:?}")}));
                            return;
                        }
                    }
                }
            };
            let notifications = async {
                let mut cursor = 0;
                loop {
                    let request = match notification.recv_next_request().await {
                        Ok(request) => request,
                        Err(e) => {
                            emit(json!({"event": "ended", "protocol": "notification", "connection": connection, "detail": format!("{e:?}")}));
                            return;
                        }
                    };
                    let blocking = request == localmsgnotification::Request::Blocking;
                    emit(json!({"event": "request", "blocking": blocking, "connection": connection}));
                    if blocking && cursor >= notify.len() {
                        // Nothing more will ever come: a blocking request waits for good.
                        std::future::pending::<()>().await;
                    }
                    let batch: Vec<DmqMsg> = notify[cursor..].to_vec();
                    cursor = notify.len();
                    let count = batch.len();
                    // The reply as pallas encodes it: what the client under test has to read.
                    let reply = if blocking {
                        localmsgnotification::Message::ReplyMessagesBlocking(batch.clone())
                    } else {
                        localmsgnotification::Message::ReplyMessagesNonBlocking(batch.clone(), false)
                    };
                    let wire = hex(&minicbor::to_vec(&reply).expect("encoding into a Vec cannot fail"));
                    let sent = if blocking {
                        notification.send_reply_messages_blocking(batch).await
                    } else {
                        notification.send_reply_messages_non_blocking(batch, false).await
                    };
                    if let Err(e) = sent {
                        emit(json!({"event": "error", "stage": "reply", "connection": connection, "detail": format!("{e:?}")}));
                        return;
                    }
                    emit(json!({
                        "event": "replied", "blocking": blocking, "messages": count, "wire": wire, "connection": connection,
                    }));
                }
            };
            // Either protocol ending (done, or the client gone) ends the connection.
            tokio::select! {
                _ = submissions => {}
                _ = notifications => {}
            }
            server.abort().await;
        }
    };
}

/// `reject_json` and `reject_of` for the lines with structured reasons (0.35 and 1.x):
/// `invalid:TEXT`, `already-received`, `expired`, `other:TEXT`.
macro_rules! structured_rejects {
    ($net:ident) => {
        use $net::miniprotocols::localmsgsubmission::DmqMsgRejectReason;

        fn reject_json(reason: &DmqMsgValidationError) -> Value {
            match &reason.0 {
                DmqMsgRejectReason::Invalid(text) => json!({"kind": "invalid", "text": text}),
                DmqMsgRejectReason::AlreadyReceived => json!({"kind": "already-received"}),
                DmqMsgRejectReason::Expired => json!({"kind": "expired"}),
                DmqMsgRejectReason::Other(text) => json!({"kind": "other", "text": text}),
            }
        }

        fn reject_of(spec: &str) -> Result<DmqMsgValidationError, String> {
            let reason = match spec.split_once(':') {
                Some(("invalid", text)) => DmqMsgRejectReason::Invalid(text.to_string()),
                Some(("other", text)) => DmqMsgRejectReason::Other(text.to_string()),
                None if spec == "already-received" => DmqMsgRejectReason::AlreadyReceived,
                None if spec == "expired" => DmqMsgRejectReason::Expired,
                _ => return Err(format!("--verdict: accepted, invalid:TEXT, already-received, expired or other:TEXT, not {spec:?}")),
            };
            Ok(DmqMsgValidationError(reason))
        }
    };
}
