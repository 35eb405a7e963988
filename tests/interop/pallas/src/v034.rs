//! pallas-network 0.34: the legacy layout, and a reject reason that is a bare text string.

dmq_roles!(pallas_network_034, pallas_codec_034);

const LAYOUT: &str = "legacy";

fn message_id(m: &DmqMsg) -> &[u8] {
    &m.msg_payload.msg_id
}

fn reject_json(reason: &DmqMsgValidationError) -> Value {
    json!({"kind": "text", "text": reason.0})
}

/// `text:TEXT`, the only reject this line can express.
fn reject_of(spec: &str) -> Result<DmqMsgValidationError, String> {
    match spec.split_once(':') {
        Some(("text", text)) => Ok(DmqMsgValidationError(text.to_string())),
        _ => Err(format!("--verdict for pallas 0.34: accepted or text:TEXT, not {spec:?}")),
    }
}
