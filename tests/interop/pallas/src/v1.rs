//! pallas-network 1.x: the current layout, `[id, [body, kesPeriod, expiresAt], ...]`.

dmq_roles!(pallas_network_1, pallas_codec_1);
structured_rejects!(pallas_network_1);

const LAYOUT: &str = "current";

fn message_id(m: &DmqMsg) -> &[u8] {
    &m.msg_id
}
