# Perl parity probe (tests/parity/runtimes.py): %SIG handlers (deferred signals), alarm,
# fork/waitpid, SIGCHLD reaping, system/backticks/pipe opens, files, and one-shot
# handlers (POSIX::sigaction with SA_RESETHAND) that clean up and die of the signal (perl
# blocks the signal while its handler runs: the death comes when the handler returns).
use strict;
use warnings;
use POSIX ();
$| = 1;
my $mode = shift // 'all';
if ($mode eq 'die') { die "dead on purpose\n" }
if ($mode eq 'exit') { exit 42 }
if ($mode eq 'alarm') { alarm 1; sleep 10; exit 0 }    # SIGALRM's default action
if ($mode eq 'resethand') {
    POSIX::sigaction(POSIX::SIGTERM(), POSIX::SigAction->new(sub { print "cleanup\n"; kill 'TERM', $$ },
                                                              POSIX::SigSet->new, POSIX::SA_RESETHAND()));
    kill 'TERM', $$;
    sleep 10;
    print "not reached\n";
    exit 0;
}
my $got = 0;
{
    local $SIG{ALRM} = sub { $got++ };
    alarm 1;
    sleep 3;
    alarm 0;
}
print "alarm handled $got\n";
eval {
    local $SIG{ALRM} = sub { die "timeout\n" };
    alarm 1;
    select(undef, undef, undef, 5);
    alarm 0;
};
print "eval: $@";
my @kids;
for my $i (1 .. 5) {
    my $pid = fork();
    exit $i unless $pid;
    push @kids, $pid;
}
my $sum = 0;
for (@kids) { waitpid($_, 0); $sum += $? >> 8 }
print "fork exit codes sum $sum\n";
my $pid = fork();
if (!$pid) { sleep 10; exit 0 }
kill 'TERM', $pid;
waitpid($pid, 0);
print "child signal ", $? & 127, "\n";
my $u = 0;
$SIG{USR1} = sub { $u++ };
kill 'USR1', $$ for 1 .. 2;
print "usr1 $u\n";
{
    my $reaped = 0;
    local $SIG{CHLD} = sub { while (waitpid(-1, POSIX::WNOHANG()) > 0) { $reaped++ } };
    for (1 .. 3) { my $p = fork(); exit 0 unless $p }
    sleep 1 while $reaped < 3;
    print "sigchld reaped $reaped\n";
}
my $out = `echo hi | tr a-z A-Z`;
print "backticks $out";
system("sh", "-c", "exit 3");
print "system ", $? >> 8, "\n";
open(my $ph, "-|", "seq", "1", "100") or die;
my $n = 0;
$n += $_ while <$ph>;
close $ph;
print "pipe sum $n\n";
mkdir "out";
for my $i (1 .. 30) { open my $f, ">", "out/f$i" or die; print $f "x" x (100 * $i); close $f }
my $b = 0;
for my $i (1 .. 30) { open my $f, "<", "out/f$i" or die; local $/; $b += length <$f>; close $f }
print "bytes $b\n";
