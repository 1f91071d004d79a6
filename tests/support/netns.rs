//! Hosts as Linux network namespaces (`ip netns`), for the distributed tests: each host has its
//! own network stack, linked to this one by a veth pair, and reaches the servers here only
//! through that link. Creating them needs `CAP_NET_ADMIN` (root); where the machine does not
//! allow it, [`Hosts::create`] says why and the caller runs its hosts as plain processes.

use std::process::Command;

/// Network namespaces `warrant-PID-I`, each with the link `wPIDiI` here (`10.231.I.1/30`) and
/// `eth0` there (`10.231.I.2/30`); removed on drop.
pub struct Hosts {
    names: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Hosts {
    /// `n` hosts (at most 200), or why they cannot be made here.
    pub fn create(n: usize) -> Result<Hosts, String> {
        let pid = std::process::id();
        let mut hosts = Hosts { names: Vec::new() };
        for i in 0..n {
            let name = format!("warrant-{pid}-{i}");
            ip(&["netns", "add", &name])?;
            hosts.names.push(name.clone());
            let here = format!("w{pid}i{i}");
            let there = format!("w{pid}o{i}");
            ip(&["link", "add", &here, "type", "veth", "peer", "name", &there])?;
            ip(&["link", "set", &there, "netns", &name])?;
            ip(&["addr", "add", &format!("10.231.{i}.1/30"), "dev", &here])?;
            ip(&["link", "set", &here, "up"])?;
            for args in [
                vec!["link", "set", "lo", "up"],
                vec!["link", "set", &there, "name", "eth0"],
                vec!["addr", "add", &format!("10.231.{i}.2/30"), "dev", "eth0"],
                vec!["link", "set", "eth0", "up"],
            ] {
                let mut all = vec!["-n", name.as_str()];
                all.extend(args);
                ip(&all)?;
            }
        }
        Ok(hosts)
    }

    /// The address of this side of host `i`'s link: where host `i` reaches servers listening here.
    pub fn gateway(&self, i: usize) -> String {
        format!("10.231.{i}.1")
    }

    /// `program` run inside host `i` (`ip netns exec`; the environment is kept).
    pub fn command(&self, i: usize, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[i], program]);
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Removing a namespace removes its end of each veth pair, and with it this end.
        for name in &self.names {
            let _ = ip(&["netns", "del", name]);
        }
    }
}
