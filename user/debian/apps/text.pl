# Perl: text processing over a generated corpus (word counts, regexes
# with captures and substitutions, sprintf formats, sorts with custom
# comparators), then fork with pipes both ways and waitpid.
use strict;
use warnings;

my @words = qw(kiln kernel rust debian linux pipe fork exec signal thread page frame);
my $seed = 42;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed; }
my @lines;
for my $i (1 .. 400) {
    my $n = 3 + rnd() % 8;
    push @lines, join(' ', map { $words[rnd() % @words] } 1 .. $n) . " #$i";
}

my %count;
for (@lines) { $count{$_}++ for grep { /^[a-z]+$/ } split ' '; }
for my $w (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count) {
    printf "%-8s %5d %6.2f%%\n", $w, $count{$w}, 100 * $count{$w} / 400;
}

my @tagged = grep { /\b(fork|exec)\b.*\b(pipe|signal)\b/ } @lines;
printf "lines with fork|exec before pipe|signal: %d\n", scalar @tagged;
my $first = $tagged[0];
(my $shout = $first) =~ s/\b(\w)(\w*)/\U$1\E$2/g;
print "capitalised: $shout\n";
my @nums = map { /#(\d+)$/ ? $1 : () } @tagged[0 .. 4];
print "numbers: @nums\n";
printf "sprintf: [%05d] [%-6s] [%x] [%o] [%e] [%.3g] [%s]\n", 42, "ab", 255, 8, 12345.678, 0.000123456, join(',', reverse 1 .. 5);
my %h = (apple => 3, pear => 1, fig => 2);
print "sorted by value: ", join(' ', map {"$_=$h{$_}"} sort { $h{$a} <=> $h{$b} } keys %h), "\n";
print "tr count: ", ($lines[0] =~ tr/a-z//), "\n";
my $csv = 'a,"b,c",d,"e ""q"""';
my @fields = $csv =~ /("(?:[^"]|"")*"|[^,]*)(?:,|$)/g;
print "csv fields: ", scalar(@fields), " <", join('|', @fields[0 .. 3]), ">\n";

# fork with a pipe from the child, and one to it.
pipe(my $from_child, my $to_parent) or die "pipe: $!";
pipe(my $from_parent, my $to_child) or die "pipe: $!";
my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    close $from_child; close $to_child;
    my $sum = 0;
    while (my $l = <$from_parent>) { chomp $l; $sum += $l; }
    print $to_parent "child sum $sum\n";
    close $to_parent;
    exit 3;
}
close $to_parent; close $from_parent;
print $to_child "$_\n" for 1 .. 100;
close $to_child;
my $reply = <$from_child>;
waitpid($pid, 0);
print "from child: $reply";
printf "child exit status: %d\n", $? >> 8;

# open with a pipe to a command, and from one.
open(my $sort, '|-', 'sort', '-r') or die;
print $sort "$_\n" for qw(b c a);
close $sort;
open(my $seq, '-|', 'seq', '3') or die;
my @got = <$seq>;
close $seq;
chomp @got;
print "seq via pipe: @got\n";
my $out = `echo backticks`;
print "qx: $out";
my @kids;
for my $k (1 .. 5) {
    my $p = fork() // die;
    if (!$p) { exit $k * 2; }
    push @kids, $p;
}
my @codes = map { waitpid($_, 0); $? >> 8 } @kids;
print "five children: @codes\n";
