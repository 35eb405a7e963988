//! pallas-network 0.35: the legacy layout (id inside the payload), structured reject reasons.

dmq_roles!(pallas_network_035, pallas_codec_035);
structured_rejects!(pallas_network_035);

const LAYOUT: &str = "legacy";

fn message_id(m: &DmqMsg) -> &[u8] {
    &m.msg_payload.msg_id
}
