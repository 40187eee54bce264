#!/usr/bin/perl
# rankd per-rank supervisor: one per rank, outliving the agent that started it.
#
# The fallback of the native launcher (packages/agent/native, launcher.ts), used where it
# could not be built or on RANKD_LAUNCHER=perl. Both keep the contract below and write the
# same records byte for byte (test/ranks/native-launcher.test.ts holds them to it); only
# the native one pins the rank itself (--cpus/--mems), so here numactl or taskset is in
# the exec chain.
#
# Why a supervisor at all: the agent must be restartable (SIGKILL included) while ranks
# run. The rank's exit status can only be collected by its parent, so the parent must be
# something that does not die with the agent. This process is that parent: it runs in
# its own session (the agent spawns it detached), waits for the rank, and records the
# exit status in exit.json, where a restarted agent finds it.
#
# Why perl: it is Essential in Debian (perl-base), starts in ~3 ms and ~4 MB, and can
# fork, exec an argv without a shell, waitpid, and tell an exit code from a signal
# exactly. A Node.js supervisor costs ~40 ms and ~30 MB per rank; a /bin/sh wrapper
# cannot tell "exit 137" from "killed by SIGKILL". No module is loaded (POSIX alone costs
# ~25 ms), so only builtins are used, plus syscall() for setsid(2) and prctl(2) with the
# numbers the agent passes (RANKD_SYSCALL_SETSID, RANKD_SYSCALL_PRCTL: perl-base has no
# syscall.ph). Without them the agent puts util-linux's setsid(1) in front of the rank.
#
# Usage:
#   supervisor.pl run  RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...
#       The rank's environment arrives on stdin as NAME=VALUE\0 records. The agent reads
#       one line on stdout: "started PID" or "failed CODE MESSAGE". RANKD_PASS_FD=N in the
#       supervisor's own environment names an inherited descriptor (the rank's PMI socket)
#       that the rank keeps and the supervisor closes after the fork. RANKD_STDIN_FD=N
#       names one that becomes the rank's stdin (after the drop to the user), also closed
#       here after the fork; without it the rank's stdin is /dev/null.
#   supervisor.pl exec RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...
#       PTY ranks, exec and shell: the parent (node-pty, or the agent) holds the stdio, so
#       this only prepares the process and execs. The environment comes as NAME=VALUE\0
#       records in RANKDIR/env, read and deleted first thing.
#
# In both modes the rank's environment is data to this process, never its own: the
# agent starts it with a fixed one, so that the rank's PERL5OPT, PERL5LIB, LC_ALL or
# LD_PRELOAD never act in this interpreter, which may be root. It is installed only for
# the exec, after the switch to the user.
use strict;

my ($mode, $dir, $cgroup, $user, $cwd, $sep, @argv) = @ARGV;
if (!defined $sep || $sep ne '--' || !@argv || ($mode ne 'run' && $mode ne 'exec')) {
    print STDERR "usage: supervisor.pl run|exec RANKDIR CGROUP|- UID:GID:GROUPS|- CWD -- ARGV...\n";
    exit 2;
}

if ($mode eq 'exec') {
    my $fail = sub { print STDERR "rankd: $_[0] $_[1]\n"; exit 127 };
    my %env = env_from_file("$dir/env", $fail);
    prepare(\%env, $fail);
    exec { $argv[0] } @argv;
    my ($code, $status) = (exec_failure(), $! == ENOENT() ? 127 : 126);
    print STDERR "rankd: $code " . exec_words($argv[0]) . "\n";
    exit $status;
}

$SIG{PIPE} = 'IGNORE';    # the agent may be gone when we answer it
open(STDERR, '>>', "$dir/supervisor.log");
my %env = read_env();
open(STDIN, '<', '/dev/null');
# The job's stdin (a socket the agent writes into): only the rank holds it after the fork,
# so that the agent's writes fail once the rank is gone.
my $in;
if (defined $ENV{RANKD_STDIN_FD}) {
    ($ENV{RANKD_STDIN_FD} =~ /^\d{1,6}$/ && $ENV{RANKD_STDIN_FD} > 2 && open($in, '<&=', $ENV{RANKD_STDIN_FD}))
        or answer_failed('RANKD_RANK_SPAWN_FAILED', "RANKD_STDIN_FD=$ENV{RANKD_STDIN_FD} is not an open descriptor above 2");
}
open(my $out, '>', "$dir/stdout") or answer_failed('RANKD_RANK_SPAWN_FAILED', "$dir/stdout: $!");
open(my $err, '>', "$dir/stderr") or answer_failed('RANKD_RANK_SPAWN_FAILED', "$dir/stderr: $!");
# The child reports a failed setup or exec on this pipe. Perl marks fds above 2
# close-on-exec, so a successful exec closes it and the parent reads EOF.
pipe(my $report_r, my $report_w) or answer_failed('RANKD_RANK_SPAWN_FAILED', "pipe: $!");
$| = 1;
become_subreaper();

my $pid = fork();
answer_failed('RANKD_RANK_SPAWN_FAILED', "fork: $!") unless defined $pid;
if ($pid == 0) {
    close $report_r;
    $SIG{PIPE} = 'DEFAULT';    # an ignored signal would survive exec into the rank
    my $fail = sub { syswrite $report_w, "$_[0] $_[1]"; exit 127 };
    my $setsid = $ENV{RANKD_SYSCALL_SETSID};
    if (defined $setsid && $setsid =~ /^\d+$/) {
        # the rank's own session and process group; returns the new session id, our pid
        syscall($setsid + 0) == $$ or $fail->('RANKD_RANK_SPAWN_FAILED', "setsid: $!");
    }
    prepare(\%env, $fail);
    # installed only after the drop to the user, as the output files are
    if ($in) {
        open(STDIN, '<&', $in) or $fail->('RANKD_RANK_SPAWN_FAILED', "stdin: $!");
        close $in;
    }
    open(STDOUT, '>&', $out) or $fail->('RANKD_RANK_SPAWN_FAILED', "stdout: $!");
    open(STDERR, '>&', $err) or $fail->('RANKD_RANK_SPAWN_FAILED', "stderr: $!");
    exec { $argv[0] } @argv;
    $fail->(exec_failure(), exec_words($argv[0]));
}
close $report_w;
close $out;
close $err;
close $in if $in;
# A socket passed to the rank (PMI_FD): only the rank may hold it, so that its other end
# sees EOF when the rank is gone.
if (defined $ENV{RANKD_PASS_FD} && $ENV{RANKD_PASS_FD} =~ /^\d+$/ && open(my $passed, '+<&=', $ENV{RANKD_PASS_FD})) {
    close $passed;
}
my $failure = do { local $/; <$report_r> };
close $report_r;
if (defined $failure && length $failure) {
    waitpid($pid, 0);
    my ($code, $message) = split / /, $failure, 2;
    write_json("$dir/exit.json", '{"code":null,"signal":null,"failed":{"code":' . json_str($code) . ',"message":' . json_str($message) . '}}');
    answer_failed($code, $message, 1);
}

# The rank exists: make it findable before anyone is told it started.
write_json("$dir/rank.json", sprintf('{"pid":%d,"pgid":%d,"supervisorPid":%d,"supervisorStartTicks":%s,"cgroup":%s,"pty":false}',
    $pid, $pid, $$, start_ticks($$), $cgroup eq '-' ? 'null' : json_str($cgroup)));
print STDOUT "started $pid\n";
open(STDOUT, '>', '/dev/null');

# Whoever signals the supervisor means the rank.
for my $sig (qw(TERM INT HUP QUIT USR1 USR2)) {
    $SIG{$sig} = sub { kill $sig, -$pid };
}
# Wait for the leader; as the subreaper, also reap the rank's orphans as they die, so
# that no zombie of the rank waits on init (which may take its time).
my $status = -1;
for (;;) {
    my $p = waitpid(-1, 0);
    if ($p == $pid) { $status = $?; last }
    last if $p < 0;
}

# The leader is gone; whatever it left in its group, its cgroup or (as orphans now ours)
# anywhere else goes too, so that the output files are complete and nothing of the rank
# outlives it.
my $clean = reap_rest($pid, $cgroup eq '-' ? undef : $cgroup);
if ($status < 0) {
    # cannot happen while we are the leader's parent; never let it pass for a status
    write_json("$dir/exit.json", '{"code":null,"signal":null,"unknown":"the supervisor could not wait for the rank"}');
    exit 0;
}
my $signo = $status & 127;
write_json("$dir/exit.json", sprintf('{"code":%s,"signal":%s,"core":%s,"leftover":%s}',
    $signo ? 'null' : ($status >> 8), $signo ? $signo : 'null', ($status & 128) ? 'true' : 'false', $clean ? 'false' : 'true'));
exit 0;

# Everything the rank's process needs before exec: cgroup, identity, cwd, environment.
# Runs in the child (run mode) or in place (exec mode); $fail never returns.
# ENOENT on Linux, every architecture (Errno.pm would be a module to load).
sub ENOENT () { 2 }

# The code of a failed exec, for the status a shell gives it (errors.ts, shellStatusOf):
# only ENOENT is "not there" (127); any other errno means it is there and cannot be run
# (126), as in bash. As the native launcher's rs_exec_failure.
sub exec_failure {
    return $! == ENOENT ? 'RANKD_RANK_PROGRAM_NOT_FOUND' : 'RANKD_RANK_PROGRAM_NOT_EXECUTABLE';
}

# Why the exec failed, in a shell's words: "FILE: strerror". ENOENT for a file that is there
# means its #! interpreter is not: that line names it, as bash 4 and srun do. The file is read
# as the rank's user (after the switch), never as root. As the native launcher's rs_exec_words.
sub exec_words {
    my ($file) = @_;
    my ($enoent, $words) = ($! == ENOENT, "$!");
    if ($enoent && index($file, '/') >= 0 && open(my $fh, '<', $file)) {
        my $head = '';
        sysread($fh, $head, 255);
        close $fh;
        return "$file: $1: bad interpreter: $words" if $head =~ /\A#![ \t]*([^ \t\r\n\0]*)/;
    }
    return "$file: $words";
}

sub prepare {
    my ($env, $fail) = @_;
    if ($cgroup ne '-') {
        # joined before dropping root: only root may write the agent's cgroup.procs
        open(my $procs, '>>', "$cgroup/cgroup.procs") or $fail->('RANKD_RANK_CGROUP', "$cgroup: $!");
        (print $procs "$$\n") && close($procs) or $fail->('RANKD_RANK_CGROUP', "$cgroup/cgroup.procs: $!");
    }
    if ($user ne '-') {
        my ($uid, $gid, $groups) = split /:/, $user;
        my @groups = grep { length } split /,/, $groups // '';
        @groups = ($gid) unless @groups;
        # Order matters: groups and gids while still root; then the effective uid, then the
        # real uid, which also sets the saved uid (setreuid), so no way back to root remains.
        $) = join(' ', $gid, @groups);
        $( = $gid;
        $> = $uid;
        $< = $uid;
        # The builtins do not report every failure; the kernel's view is the proof.
        my $status = slurp("/proc/self/status");
        my ($u) = $status =~ /^Uid:\s*(.*)$/m;
        my ($g) = $status =~ /^Gid:\s*(.*)$/m;
        my ($gs) = $status =~ /^Groups:\s*(.*)$/m;
        my $want_groups = join(' ', sort { $a <=> $b } keys %{{ map { $_ => 1 } @groups }});
        my $have_groups = join(' ', sort { $a <=> $b } split ' ', $gs // '');
        if ($u ne join("\t", ($uid) x 4) || $g ne join("\t", ($gid) x 4) || $have_groups ne $want_groups) {
            $fail->('RANKD_RANK_USER_SWITCH', "could not become uid $uid gid $gid groups $want_groups (now Uid $u Gid $g Groups $have_groups)");
        }
    }
    chdir($cwd) or $fail->('RANKD_RANK_BAD_CWD', "$cwd: $!");
    %ENV = %$env;
    $ENV{PWD} = $cwd;
}

sub read_env {
    binmode STDIN;
    my $blob = do { local $/; <STDIN> } // '';
    return parse_env($blob);
}

# The agent wrote it 0600 in a directory only root may enter; a symlink there is not ours.
# Deleted once read: a job's secrets stay on disk no longer than that.
sub env_from_file {
    my ($file, $fail) = @_;
    $fail->('RANKD_RANK_SPAWN_FAILED', "$file: a symbolic link") if -l $file;
    open(my $fh, '<', $file) or $fail->('RANKD_RANK_SPAWN_FAILED', "$file: $!");
    binmode $fh;
    my $blob = do { local $/; <$fh> } // '';
    close $fh;
    unlink($file) or $fail->('RANKD_RANK_SPAWN_FAILED', "$file: $!");
    return parse_env($blob);
}

sub parse_env {
    my ($blob) = @_;
    my %e;
    for my $rec (split /\0/, $blob) {
        my ($k, $v) = split /=/, $rec, 2;
        $e{$k} = $v // '' if defined $k && length $k;
    }
    return %e;
}

sub answer_failed {
    my ($code, $message, $recorded) = @_;
    $message =~ s/[\r\n]+/ /g;
    write_json("$dir/exit.json", '{"code":null,"signal":null,"failed":{"code":' . json_str($code) . ',"message":' . json_str($message) . '}}')
        unless $recorded;
    print STDOUT "failed $code $message\n";
    exit 0;
}

# SIGKILL to what is left of the group, the cgroup and our children (orphans of the rank,
# even those that left its group with setsid), then wait until all are gone, for at most
# ~10 s. False when something stayed.
sub reap_rest {
    my ($pgid, $cg) = @_;
    my ($delay, $waited) = (0.0005, 0);
    for (;;) {
        my $r;
        1 while ($r = waitpid(-1, 1)) > 0;    # 1 is WNOHANG on Linux (no POSIX module: see top)
        my $children = $r == 0;               # -1: no child at all
        my $group = kill 0, -$pgid;
        my $populated = $cg && slurp("$cg/cgroup.events") =~ /^populated 1$/m;
        if (!$group && !$populated && !$children) {
            rmdir $cg if $cg;
            return 1;
        }
        return 0 if $waited > 10;
        kill 'KILL', -$pgid if $group;
        # our children cannot be reused pids: they are not reaped yet
        my @kids = split ' ', slurp("/proc/$$/task/$$/children");
        kill 'KILL', @kids if @kids;
        if ($populated && open(my $k, '>', "$cg/cgroup.kill")) { print $k "1"; close $k }
        select(undef, undef, undef, $delay);
        $waited += $delay;
        $delay *= 2 if $delay < 0.05;
    }
}

# PR_SET_CHILD_SUBREAPER: orphans of the rank become our children instead of init's, so
# we reap them at once and can end even those that left the rank's process group. perl
# has no prctl builtin; the agent passes this architecture's syscall number (there is no
# syscall.ph in perl-base), and without one the supervisor does without.
sub become_subreaper {
    my $nr = $ENV{RANKD_SYSCALL_PRCTL};
    return 0 unless defined $nr && $nr =~ /^\d+$/;
    return syscall($nr + 0, 36, 1, 0, 0, 0) == 0;
}

sub start_ticks {
    my $stat = slurp("/proc/$_[0]/stat");
    $stat =~ s/^.*\) //s;
    my @f = split / /, $stat;
    return $f[19] // 'null';
}

sub slurp {
    open(my $fh, '<', $_[0]) or return '';
    local $/;
    my $s = <$fh>;
    return $s // '';
}

# Write-then-rename: a reader sees the old file or the new one, never half of one. The
# file's mtime is the record's timestamp: perl-base has no sub-second clock without
# Time::HiRes, and the kernel stamps the write with nanoseconds anyway.
sub write_json {
    my ($file, $json) = @_;
    my $tmp = "$file.$$.tmp";
    open(my $fh, '>', $tmp) or return 0;
    print $fh "$json\n";
    close $fh or return 0;
    return rename $tmp, $file;
}

sub json_str {
    my ($s) = @_;
    $s //= '';
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f])/sprintf('\\u%04x', ord $1)/ge;
    return "\"$s\"";
}
