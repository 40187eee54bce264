#!/usr/bin/perl
# rankd's rsh agent for Open MPI's mpirun (`--mca plm_rsh_agent` of an `--mpi openmpi` job).
#
# mpirun runs `AGENT HOST ARGS…`, the orted's command line. Instead of a remote shell this
# hands the arguments, one by one, to the launcher node's rankd agent, over the job's Unix
# socket (RANKD_OMPI_SOCKET, in the agent's spool: only the job's user reaches it). That
# agent keeps only the launch's values from them (orted-launch.ts), and the controller has
# HOST's agent start its own orted with them, as part of the job: nothing here is run as a
# command. It stays until that daemon ends and exits with its status, as ssh would: mpirun
# takes a non-zero exit for a daemon that failed.
#
# Protocol: one line out, `HOST\tARG\tARG…` (tabs and newlines in any are refused); lines
# back: `started PID`, then `exit CODE` or `failed MESSAGE`.
use strict;
use Socket;

sub fail { print STDERR "rankd (rsh helper): $_[0]\n"; exit 255 }

my ($host, @args) = @ARGV;
fail('usage: rsh-helper.pl HOST ARG…') unless defined $host && @args;
fail('a host or argument with a tab or newline') if grep { /[\t\n]/ } ($host, @args);
my $path = $ENV{RANKD_OMPI_SOCKET};
fail('RANKD_OMPI_SOCKET is not set: not run by a rankd launcher') unless defined $path && length $path;
open(STDIN, '<', '/dev/null');
socket(my $sock, PF_UNIX, SOCK_STREAM, 0) or fail("socket: $!");
connect($sock, pack_sockaddr_un($path)) or fail("$path: $!");
select((select($sock), $| = 1)[0]);
print $sock join("\t", $host, @args), "\n" or fail("$path: $!");
while (my $line = <$sock>) {
    chomp $line;
    if ($line =~ /^exit (\d+)$/) { exit($1 > 255 ? 255 : $1) }
    if ($line =~ /^failed (.*)$/) { fail("daemon on $host: $1") }
}
fail("the rankd agent closed the connection before the daemon on $host ended");
