#!/usr/bin/perl
# rankd's rsh agent for Open MPI's mpirun (`--mca plm_rsh_agent` of an `--mpi openmpi` job).
#
# mpirun runs `AGENT HOST ARGS…`; the arguments carry shell quoting, so they are joined with
# spaces, as ssh does, and the node's agent runs them with `sh -c`. Instead of a remote
# shell this asks the launcher node's rankd agent, over the job's Unix socket
# (RANKD_OMPI_SOCKET, in the agent's spool: only the job's user reaches it), to have the
# daemon started on HOST by HOST's agent, as part of the job. It stays until that daemon
# ends and exits with its status, as ssh would: mpirun takes a non-zero exit for a daemon
# that failed.
#
# Protocol: one line out, `HOST\tCOMMAND` (tabs and newlines in either are refused); lines
# back: `started PID`, then `exit CODE` or `failed MESSAGE`.
use strict;
use Socket;

sub fail { print STDERR "rankd (rsh helper): $_[0]\n"; exit 255 }

my ($host, @args) = @ARGV;
fail('usage: rsh-helper.pl HOST COMMAND…') unless defined $host && @args;
my $command = join(' ', @args);
fail('a host or command with a tab or newline') if "$host$command" =~ /[\t\n]/;
my $path = $ENV{RANKD_OMPI_SOCKET};
fail('RANKD_OMPI_SOCKET is not set: not run by a rankd launcher') unless defined $path && length $path;
open(STDIN, '<', '/dev/null');
socket(my $sock, PF_UNIX, SOCK_STREAM, 0) or fail("socket: $!");
connect($sock, pack_sockaddr_un($path)) or fail("$path: $!");
select((select($sock), $| = 1)[0]);
print $sock "$host\t$command\n" or fail("$path: $!");
while (my $line = <$sock>) {
    chomp $line;
    if ($line =~ /^exit (\d+)$/) { exit($1 > 255 ? 255 : $1) }
    if ($line =~ /^failed (.*)$/) { fail("daemon on $host: $1") }
}
fail("the rankd agent closed the connection before the daemon on $host ended");
