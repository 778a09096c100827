//! A control-plane program as a child process: its output in a log file, killed when dropped, and
//! killed by the kernel if the test process dies first (a test killed on a timeout leaves nothing
//! running).

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
};

use crate::{Error, Result};

pub(crate) struct Process {
    pub(crate) program: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `dir/program args`, its stdout and stderr appended to `log`.
    pub(crate) fn spawn(
        program: &'static str,
        bin_dir: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<Process> {
        let io_error = |what: &str, source| Error::Io {
            what: format!("{what} {program}"),
            source,
        };
        let binary = bin_dir.join(program);
        if !binary.is_file() {
            return Err(Error::NotBuilt {
                program,
                dir: bin_dir.to_owned(),
            });
        }
        let output = File::create(&log).map_err(|e| io_error("creating the log of", e))?;
        let errors = output
            .try_clone()
            .map_err(|e| io_error("opening the log of", e))?;
        let mut command = Command::new(&binary);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors);
        // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe calls
        // are allowed; it makes one prctl(PR_SET_PDEATHSIG) system call and touches no memory shared
        // with the parent. Without it a test killed by its runner's timeout (SIGKILL, no unwinding)
        // would leave etcd and kube-apiserver running. No crate offers this on std's Command safely.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                    .map_err(std::io::Error::from)
            });
        }
        let child = command.spawn().map_err(|e| io_error("starting", e))?;
        Ok(Process { program, child, log })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has ended.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `lines` lines of the process's output.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SIGKILL: the data these programs keep is thrown away with the test, so nothing needs a
        // graceful stop, and waiting for one would slow every test down.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `lines` lines of the file at `path` (at most its last 64 KiB are read).
fn tail(path: &Path, lines: usize) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = File::open(path)?;
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(length.saturating_sub(64 * 1024)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("({} unreadable: {error})", path.display()),
    }
}
