//! pallas-network 1.1.1: the current layout, as 1.x; the release current Mithril pins
//! (`internal/mithril-dmq/Cargo.toml`), kept beside the newest 1.x because the two differ in
//! how a dropped `DmqClient` leaves its connection.

dmq_roles!(pallas_network_1_1_1, pallas_codec_1_1_1);
structured_rejects!(pallas_network_1_1_1);

const LAYOUT: &str = "current";

fn message_id(m: &DmqMsg) -> &[u8] {
    &m.msg_id
}
