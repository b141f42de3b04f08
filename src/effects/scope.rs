//! The abstract-socket scope a sandbox runs under: a Landlock domain (Linux 6.12, ABI 6) whose
//! processes cannot connect to an abstract unix socket made outside it. bubblewrap keeps the
//! machine's network namespace when the task keeps its network, and abstract sockets (an X
//! server's, a session bus's) belong to the namespace, not to any file a mount could hide.

/// `LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`.
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
/// `LANDLOCK_CREATE_RULESET_VERSION`: asks the kernel's Landlock ABI instead of a ruleset.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// The first ABI with scopes.
const SCOPE_ABI: libc::c_long = 6;

/// `struct landlock_ruleset_attr` of ABI 6.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Whether this kernel can scope abstract unix sockets.
pub fn available() -> bool {
    // SAFETY: the version query reads no attribute (NULL, size 0).
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    abi >= SCOPE_ABI
}

/// Puts this process, and everything it runs from now on, in the scope. It handles no file
/// or network access (bubblewrap still mounts), only the abstract sockets.
pub fn enter() -> std::io::Result<()> {
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPE_ABSTRACT_UNIX_SOCKET,
    };
    // SAFETY: `attr` is a live ruleset attribute of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = fd as libc::c_int;
    // SAFETY: plain prctl and syscalls on a descriptor this function owns and closes.
    let result = unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) != 0
        {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: `fd` is the ruleset's descriptor, closed once.
    unsafe { libc::close(fd) };
    result
}
