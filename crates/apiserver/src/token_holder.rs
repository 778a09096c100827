//! Who the holder of the embedded server's token is, in the words of a real cluster's administrator:
//! a member of `system:masters`, who may do everything. Reviews, admission requests, flow control and
//! the fields kube-apiserver fills in from the request's user all name this user.

pub const USER: &str = "admin";
pub const GROUPS: [&str; 2] = ["system:masters", "system:authenticated"];
