#!/usr/bin/perl
# rankd: the program Open MPI's orted starts for every rank of an `--mpi openmpi` job.
#
# orted forks it with Open MPI's environment (OMPI_COMM_WORLD_RANK, PMIX_*, …) on top of
# the orted's own, which the node's agent set: RANKD_OMPI_JOB_DIR (this node's spool
# directory of the job) and the syscall numbers of the per-rank supervisor. It finds the
# rank's directory from OMPI_COMM_WORLD_RANK, where the agent left:
#   ompi-exec  the supervisor's argv (rank-supervisor run --cpus … --mems … RANKDIR CGROUP USER CWD -- PROGRAM …,
#              or supervisor.pl run … -- numactl … -- PROGRAM …), NUL-separated
#   ompi-inherited  what the rank inherits (the agent's PATH and locale, the submitter's
#              exported variables), NAME=VALUE\0 records (0600)
#   ompi-env   the rank's planned environment, NAME=VALUE\0 records (0600)
# and execs that supervisor in its own place (same pid: orted's child is the supervisor),
# its stdin a file with, lowest first, the inherited variables, Open MPI's own OMPI_*,
# OPAL_* and PMIX_* variables (the program needs them to join MPI_COMM_WORLD: a submitter's
# exported ones never replace them) and the planned environment. The files are deleted
# before the exec. From there on the rank is any rankd rank: pinned as planned,
# output in the spool, exit.json, found and tracked by the agent through rank.json.
#
# Anything wrong goes to stderr (orted hands it to mpirun) and exits 1.
use strict;

sub fail { print STDERR "rankd (ompi-rank): $_[0]\n"; exit 1 }

my $rank = $ENV{OMPI_COMM_WORLD_RANK};
my $jobdir = $ENV{RANKD_OMPI_JOB_DIR};
fail('OMPI_COMM_WORLD_RANK is not set: not started by Open MPI') unless defined $rank && $rank =~ /^(0|[1-9]\d{0,7})$/;
fail('RANKD_OMPI_JOB_DIR is not set: this orted was not started by a rankd agent') unless defined $jobdir && length $jobdir;
my $dir = "$jobdir/$rank";
fail("rank $rank is not planned on this node ($dir is missing): Open MPI mapped it elsewhere than rankd's rank map") unless -d $dir;

my @exec = split /\0/, slurp("$dir/ompi-exec") // fail("$dir/ompi-exec: $!");
fail("$dir/ompi-exec is empty") unless @exec;
my $inherited = slurp("$dir/ompi-inherited") // fail("$dir/ompi-inherited: $!");
my $planned = slurp("$dir/ompi-env") // fail("$dir/ompi-env: $!");
unlink "$dir/ompi-exec", "$dir/ompi-inherited", "$dir/ompi-env";

# the inherited variables, Open MPI's own over them, the planned environment over both
my %env;
records($inherited);
for my $k (keys %ENV) { $env{$k} = $ENV{$k} if $k =~ /^(OMPI_|OPAL_|PMIX_)/ }
records($planned);
my $stdin = "$dir/ompi-stdin.$$";
open(my $fh, '>', $stdin) or fail("$stdin: $!");
chmod 0600, $stdin;
binmode $fh;
print $fh join('', map { "$_=$env{$_}\0" } sort keys %env);
close $fh or fail("$stdin: $!");
open(STDIN, '<', $stdin) or fail("$stdin: $!");
unlink $stdin;
# the supervisor answers "started PID" to whoever started it; nobody here listens
open(STDOUT, '>', '/dev/null');

# Only what the supervisor itself reads, as the agent starts every supervisor (the fixed
# environment of ranks/caller-env.ts): nothing of the job's or Open MPI's environment
# (PERL5OPT, LD_PRELOAD, …) acts in the supervisor, which is root until it switches.
my %keep;
for my $k (qw(RANKD_SYSCALL_SETSID RANKD_SYSCALL_PRCTL)) { $keep{$k} = $ENV{$k} if defined $ENV{$k} }
%ENV = (PATH => '/usr/sbin:/usr/bin:/sbin:/bin', LANG => 'C', %keep);
exec { $exec[0] } @exec;
fail("$exec[0]: $!");

sub records {
    for my $rec (split /\0/, $_[0]) {
        my ($k, $v) = split /=/, $rec, 2;
        $env{$k} = $v // '' if defined $k && length $k;
    }
}

sub slurp {
    open(my $in, '<', $_[0]) or return undef;
    binmode $in;
    local $/;
    my $s = <$in>;
    return $s // '';
}
