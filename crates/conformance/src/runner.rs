//! Plays scenarios against one server: requests over its client, watches read to a count, kubectl and
//! Python client runs with a kubeconfig of their own, kube-rs's discovery. What a server answers,
//! errors included, is an [`Answer`]; only a broken corpus stops a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::BodyExt;
use serde::Serialize;
use serde_json::Value;
use testenv::ControlPlane;
use tokio::io::AsyncWriteExt;
use tokio::time::{Instant, timeout, timeout_at};

use crate::scenario::{Action, KubeRsCall, Scenario, Step, Until, substitute};
use crate::{Error, Result};

/// How long one request or watch may take. Generous: a loaded 2-core machine runs both
/// servers; an answer that takes longer is recorded as a timeout, which the comparison shows.
const STEP_LIMIT: Duration = Duration::from_secs(30);
/// How long a kubectl or Python run may take: a process that starts an interpreter or reads discovery
/// before its requests, several of them at once on a loaded machine, needs more room than one request.
const PROGRAM_LIMIT: Duration = Duration::from_secs(90);
/// How long an `until` step polls: the real kube-controller-manager's garbage collector rebuilds its
/// graph every 30 s, so a collection can take that long plus the sweep.
const UNTIL_LIMIT: Duration = Duration::from_secs(90);
const UNTIL_PERIOD: Duration = Duration::from_millis(250);
/// How long a step waits for the workload controllers to settle (they take milliseconds; the margin
/// is for a loaded machine), and how often it looks.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
const SETTLE_PERIOD: Duration = Duration::from_millis(50);

/// What every `python:` step starts with: the client, `ns`, `show` and `refused` (see the file).
const PYTHON_PRELUDE: &str = include_str!("python/prelude.py");

/// The headers clients read; all others (dates, audit ids, priority-and-fairness ids) are left out.
const COMPARED_HEADERS: [&str; 2] = ["content-type", "warning"];

/// One step's answer as a client sees it. For kubectl, `status` is the exit code and `body` holds
/// stdout and stderr; for a Python script, the exit code and its printed lines (JSON where they are)
/// and stderr; for a watch, `body` is the list of events.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub status: i64,
    pub headers: BTreeMap<String, Vec<String>>,
    pub body: Value,
}

impl Answer {
    fn failed(problem: String) -> Answer {
        Answer {
            status: -1,
            headers: BTreeMap::new(),
            body: Value::String(problem),
        }
    }
}

/// One server under test.
pub struct Target {
    pub name: &'static str,
    client: kube::Client,
    url: String,
    /// Holds the kubeconfig and serves as HOME for kubectl (its discovery cache included).
    home: tempfile::TempDir,
}

impl Target {
    pub fn new(name: &'static str, plane: &ControlPlane) -> Result<Target> {
        let home = tempfile::tempdir().map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
        plane.write_kubeconfig(&home.path().join("kubeconfig"))?;
        Ok(Target {
            name,
            client: plane.client(),
            url: plane.url(),
            home,
        })
    }

    /// The server's address as it appears in messages (`https://127.0.0.1:port`).
    pub fn url(&self) -> &str {
        &self.url
    }

    fn kubeconfig(&self) -> PathBuf {
        self.home.path().join("kubeconfig")
    }

    /// Every step of `scenario` in namespace `namespace` (created first), in order.
    pub async fn play(&self, scenario: &Scenario, namespace: &str) -> Result<Vec<Answer>> {
        let mut vars = BTreeMap::from([("ns".to_owned(), namespace.to_owned())]);
        let namespace_body = serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}
        });
        let created = self
            .send(
                "POST",
                "/api/v1/namespaces",
                Some(namespace_body.to_string()),
                &[],
            )
            .await;
        if created.status != 201 {
            return Err(Error::Scenario {
                scenario: scenario.name.clone(),
                step: "namespace".into(),
                problem: format!(
                    "{} did not create namespace {namespace}: {:?}",
                    self.name, created
                ),
            });
        }
        let mut answers = Vec::with_capacity(scenario.steps.len());
        for (index, step) in scenario.steps.iter().enumerate() {
            self.settle_workloads(namespace).await;
            let answer = self.step(step, &vars).await;
            for (name, pointer) in &step.capture {
                let Some(value) = answer.body.pointer(pointer) else {
                    return Err(Error::Scenario {
                        scenario: scenario.name.clone(),
                        step: scenario.step_key(index),
                        problem: format!("{} answered without {pointer} to capture: {answer:?}", self.name),
                    });
                };
                let value = value
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| value.to_string());
                vars.insert(name.clone(), value);
            }
            answers.push(answer);
        }
        Ok(answers)
    }

    /// Waits until the Deployment and ReplicaSet controllers are done with the namespace's
    /// Deployments, so that a step sees the state they settle in rather than one on the way: on
    /// the real control plane they act after the request that set them off was answered (the
    /// embedded server's act before it is). Settled: every ReplicaSet has observed its spec and has
    /// as many Pods as it asks for, and every Deployment has observed its spec and counts the Pods
    /// its ReplicaSets have. A namespace that never settles is played on after [`SETTLE_LIMIT`], and
    /// the comparison shows it.
    async fn settle_workloads(&self, namespace: &str) {
        let deadline = Instant::now() + SETTLE_LIMIT;
        loop {
            let list = |plural: &str| {
                let target = format!("/apis/apps/v1/namespaces/{namespace}/{plural}");
                async move {
                    self.send("GET", &target, None, &[]).await.body["items"]
                        .as_array()
                        .cloned()
                }
            };
            let (Some(deployments), Some(replica_sets)) =
                (list("deployments").await, list("replicasets").await)
            else {
                return;
            };
            if workloads_settled(&deployments, &replica_sets) {
                return;
            }
            if Instant::now() >= deadline {
                let names = |items: &[Value]| {
                    let described: Vec<String> = items
                        .iter()
                        .map(|o| format!("{} {}", o["metadata"]["name"], o["status"]))
                        .collect();
                    described.join("; ")
                };
                eprintln!(
                    "{}: the workloads of {namespace} did not settle within {SETTLE_LIMIT:?}: deployments {}; replica sets {}",
                    self.name,
                    names(&deployments),
                    names(&replica_sets)
                );
                return;
            }
            tokio::time::sleep(SETTLE_PERIOD).await;
        }
    }

    async fn step(&self, step: &Step, vars: &BTreeMap<String, String>) -> Answer {
        match step.action() {
            Some(Action::Request { method, target }) => {
                let target = substitute(target, vars);
                let body = match (&step.body, &step.raw) {
                    (Some(body), _) => match serde_json::to_string(body) {
                        Ok(json) => Some(substitute(&json, vars)),
                        Err(e) => return Answer::failed(format!("body is not JSON: {e}")),
                    },
                    (None, Some(raw)) => Some(substitute(raw, vars)),
                    (None, None) => None,
                };
                let headers: Vec<(String, String)> = step
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), substitute(v, vars)))
                    .collect();
                match (&step.watch, &step.until) {
                    (Some(watch), _) => self.watch(&target, &headers, watch.events).await,
                    (None, Some(until)) => self.poll(method, &target, body, &headers, until).await,
                    (None, None) => self.send(method, &target, body, &headers).await,
                }
            }
            Some(Action::Kubectl { args }) => {
                let args: Vec<String> = args.iter().map(|a| substitute(a, vars)).collect();
                let stdin = step.stdin.as_deref().map(|s| substitute(s, vars));
                self.kubectl(step.version.as_deref(), &args, stdin).await
            }
            Some(Action::Python { script }) => {
                let namespace = vars.get("ns").map(String::as_str).unwrap_or_default();
                self.python(&substitute(script, vars), namespace).await
            }
            Some(Action::KubeRs {
                call: KubeRsCall::Discovery,
            }) => self.discovery().await,
            None => Answer::failed("no single action".into()),
        }
    }

    fn request(
        &self,
        method: &str,
        target: &str,
        body: Option<String>,
        headers: &[(String, String)],
    ) -> std::result::Result<http::Request<kube::client::Body>, String> {
        let mut builder = http::Request::builder().method(method).uri(target);
        let has_content_type = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        if body.is_some() && !has_content_type {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        builder
            .body(kube::client::Body::from(body.unwrap_or_default().into_bytes()))
            .map_err(|e| format!("invalid request: {e}"))
    }

    async fn send(
        &self,
        method: &str,
        target: &str,
        body: Option<String>,
        headers: &[(String, String)],
    ) -> Answer {
        let request = match self.request(method, target, body, headers) {
            Ok(request) => request,
            Err(problem) => return Answer::failed(problem),
        };
        let exchange = async {
            let response = self.client.send(request).await.map_err(|e| e.to_string())?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>(answer(parts, decode_body(&bytes)))
        };
        match timeout(STEP_LIMIT, exchange).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(problem)) => Answer::failed(problem),
            Err(_) => Answer::failed(format!("no answer within {STEP_LIMIT:?}")),
        }
    }

    async fn poll(
        &self,
        method: &str,
        target: &str,
        body: Option<String>,
        headers: &[(String, String)],
        until: &Until,
    ) -> Answer {
        let deadline = Instant::now() + UNTIL_LIMIT;
        loop {
            let answer = self.send(method, target, body.clone(), headers).await;
            let status_holds = until.status.is_none_or(|s| answer.status == i64::from(s));
            let value_holds = match (&until.pointer, &until.value) {
                (Some(pointer), value) => answer.body.pointer(pointer) == value.as_ref(),
                _ => true,
            };
            if (status_holds && value_holds) || Instant::now() >= deadline {
                return answer;
            }
            tokio::time::sleep(UNTIL_PERIOD).await;
        }
    }

    /// The first `events` events of a watch, read line by line as they stream.
    async fn watch(&self, target: &str, headers: &[(String, String)], events: usize) -> Answer {
        let request = match self.request("GET", target, None, headers) {
            Ok(request) => request,
            Err(problem) => return Answer::failed(problem),
        };
        let deadline = Instant::now() + STEP_LIMIT;
        let response = match timeout_at(deadline, self.client.send(request)).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Answer::failed(e.to_string()),
            Err(_) => return Answer::failed(format!("no answer within {STEP_LIMIT:?}")),
        };
        let (parts, mut body) = response.into_parts();
        let mut buffer = Vec::new();
        let mut seen = Vec::new();
        while seen.len() < events {
            match timeout_at(deadline, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        buffer.extend_from_slice(data);
                    }
                    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buffer.drain(..=end).collect();
                        if !line.iter().all(u8::is_ascii_whitespace) {
                            seen.push(decode_body(&line));
                        }
                    }
                }
                // The stream ended, failed or went quiet: what arrived is the answer.
                Ok(Some(Err(_))) | Ok(None) | Err(_) => break,
            }
        }
        if !buffer.iter().all(u8::is_ascii_whitespace) {
            seen.push(decode_body(&buffer));
        }
        answer(parts, Value::Array(seen))
    }

    async fn kubectl(&self, version: Option<&str>, args: &[String], stdin: Option<String>) -> Answer {
        let program = match version {
            Some(version) => PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.{version}")),
            None => PathBuf::from("kubectl"),
        };
        match self.run_program(&program, args, &[], stdin).await {
            Ok(output) => Answer {
                status: exit_code(&output),
                headers: BTreeMap::new(),
                body: serde_json::json!({
                    "stdout": String::from_utf8_lossy(&output.stdout),
                    "stderr": String::from_utf8_lossy(&output.stderr),
                }),
            },
            Err(problem) => Answer::failed(problem),
        }
    }

    /// `script` run by the official Python client's interpreter, `NS` naming the scenario's namespace.
    async fn python(&self, script: &str, namespace: &str) -> Answer {
        let program = repository().join(".venv/bin/python");
        let args = ["-c".to_owned(), format!("{PYTHON_PRELUDE}\n{script}")];
        match self
            .run_program(&program, &args, &[("NS", namespace)], None)
            .await
        {
            Ok(output) => {
                let printed: Vec<Value> = String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .filter(|line| !line.trim().is_empty())
                    .map(|line| serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_owned())))
                    .collect();
                Answer {
                    status: exit_code(&output),
                    headers: BTreeMap::new(),
                    body: serde_json::json!({
                        "printed": printed,
                        "stderr": String::from_utf8_lossy(&output.stderr),
                    }),
                }
            }
            Err(problem) => Answer::failed(problem),
        }
    }

    /// Runs `program` with this server's kubeconfig and HOME, nothing else of the test's environment
    /// but PATH and `env`, for at most [`PROGRAM_LIMIT`].
    async fn run_program(
        &self,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
        stdin: Option<String>,
    ) -> std::result::Result<std::process::Output, String> {
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.kubeconfig())
            .envs(env.iter().copied())
            .current_dir(repository())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let run = async {
            let mut child = command
                .spawn()
                .map_err(|e| format!("{}: {e}", program.display()))?;
            if let Some(mut pipe) = child.stdin.take() {
                if let Some(input) = stdin {
                    pipe.write_all(input.as_bytes())
                        .await
                        .map_err(|e| e.to_string())?;
                }
                drop(pipe);
            }
            child.wait_with_output().await.map_err(|e| e.to_string())
        };
        match timeout(PROGRAM_LIMIT, run).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "{} did not finish within {PROGRAM_LIMIT:?}",
                program.display()
            )),
        }
    }

    /// What kube-rs's `Discovery` finds: each resource of each group version, with its scope, verbs
    /// and subresources.
    async fn discovery(&self) -> Answer {
        let run = kube::Discovery::new(self.client.clone()).run();
        let discovery = match timeout(STEP_LIMIT, run).await {
            Ok(Ok(discovery)) => discovery,
            Ok(Err(e)) => return Answer::failed(e.to_string()),
            Err(_) => return Answer::failed(format!("no discovery within {STEP_LIMIT:?}")),
        };
        let mut found = Vec::new();
        // The corpus's own CRDs (groups under example.com) come and go as the scenarios beside this
        // one run: what they add is timing, not an answer.
        let built_in = |group: &&kube::discovery::ApiGroup| !group.name().ends_with(".example.com");
        for group in discovery.groups().filter(built_in) {
            for version in group.versions() {
                for (resource, capabilities) in group.versioned_resources(version) {
                    let mut verbs = capabilities.operations.clone();
                    verbs.sort();
                    let mut subresources: Vec<String> = capabilities
                        .subresources
                        .iter()
                        .map(|(sub, _)| sub.plural.clone())
                        .collect();
                    subresources.sort();
                    found.push(serde_json::json!({
                        "name": format!("{}/{}", resource.api_version, resource.plural),
                        "kind": resource.kind,
                        "namespaced": capabilities.scope == kube::discovery::Scope::Namespaced,
                        // One text each: a missing verb is one divergence, not one per verb after it.
                        "verbs": verbs.join(","),
                        "subresources": subresources.join(","),
                    }));
                }
            }
        }
        Answer {
            status: 0,
            headers: BTreeMap::new(),
            body: Value::Array(found),
        }
    }
}

/// Whether the workload controllers are done with these Deployments and ReplicaSets (see
/// [`Target::settle_workloads`]).
fn workloads_settled(deployments: &[Value], replica_sets: &[Value]) -> bool {
    let number = |object: &Value, pointer: &str, default: i64| {
        object.pointer(pointer).and_then(Value::as_i64).unwrap_or(default)
    };
    let live = |object: &&Value| object.pointer("/metadata/deletionTimestamp").is_none();
    let observed = |object: &Value| {
        number(object, "/status/observedGeneration", 0) >= number(object, "/metadata/generation", 0)
    };
    let sets_done = replica_sets
        .iter()
        .filter(live)
        .all(|rs| observed(rs) && number(rs, "/status/replicas", 0) == number(rs, "/spec/replicas", 1));
    let deployments_done = deployments.iter().filter(live).all(|deployment| {
        let uid = deployment.pointer("/metadata/uid");
        let counted: i64 = replica_sets
            .iter()
            .filter(|rs| {
                rs.pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|owners| owners.iter().any(|o| o.get("uid") == uid))
            })
            .map(|rs| number(rs, "/status/replicas", 0))
            .sum();
        observed(deployment) && number(deployment, "/status/replicas", 0) == counted
    });
    sets_done && deployments_done
}

fn exit_code(output: &std::process::Output) -> i64 {
    i64::from(output.status.code().unwrap_or(-1))
}

fn answer(parts: http::response::Parts, body: Value) -> Answer {
    let mut headers = BTreeMap::new();
    for name in COMPARED_HEADERS {
        let values: Vec<String> = parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        if !values.is_empty() {
            headers.insert(name.to_owned(), values);
        }
    }
    Answer {
        status: i64::from(parts.status.as_u16()),
        headers,
        body,
    }
}

/// JSON when the bytes are JSON, the text otherwise, `null` when empty.
fn decode_body(bytes: &[u8]) -> Value {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The repository's root: kubectl runs there, so that corpus steps may name `config/...` files.
pub fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
