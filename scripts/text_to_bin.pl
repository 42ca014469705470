#!/usr/bin/env perl
# Writes a text file as an llm.c token file (.bin) that zerotrain reads (data.format llmc, or auto
# by the header): 256 little-endian int32 (magic 20240520, version 1, token count, zeros), then the
# tokens as little-endian uint16.
#
#   scripts/text_to_bin.pl INPUT.txt OUTPUT.bin
#       one token per byte (ids 0..255: a model with model.vocab_size 256, such as the toy preset)
#   scripts/text_to_bin.pl --gpt2 vocab.json merges.txt INPUT.txt OUTPUT.bin
#       GPT-2's byte-level BPE (ids 0..50256: the gpt2-* presets), from the tokenizer's vocab.json
#       and merges.txt (the files of the Hugging Face "gpt2" model); gives the ids that GPT-2's
#       tokenizer (tiktoken's "gpt2", transformers' GPT2Tokenizer) gives for the same text.
#
# Needs only perl-base (no module beyond strict and warnings). The input is read whole, as UTF-8
# for --gpt2 (invalid bytes are an error).
use strict;
use warnings;

sub usage {
  print STDERR "usage: $0 [--gpt2 VOCAB_JSON MERGES_TXT] INPUT.txt OUTPUT.bin\n";
  exit 2;
}
sub fail { print STDERR "text_to_bin: @_\n"; exit 1; }

my ($vocab_file, $merges_file);
if (@ARGV && $ARGV[0] eq '--gpt2') {
  shift @ARGV;
  ($vocab_file, $merges_file) = splice(@ARGV, 0, 2);
  usage() unless defined $merges_file;
}
usage() unless @ARGV == 2;
my ($input, $output) = @ARGV;
fail("$input: is a directory") if -d $input;
open(my $in, '<:raw', $input) or fail("$input: cannot open: $!");
my $text = do { local $/; <$in> };
close $in;
$text = '' unless defined $text;

my @tokens = defined $vocab_file ? gpt2_tokens($text) : unpack('C*', $text);
fail("$input: " . scalar(@tokens) . " tokens do not fit the header's int32 count") if @tokens > 2147483647;

open(my $out, '>:raw', $output) or fail("$output: cannot open for writing: $!");
print $out pack('l<*', 20240520, 1, scalar(@tokens), (0) x 253);
print $out pack('v*', @tokens);
close $out or fail("$output: write failed: $!");
printf STDERR "text_to_bin: %s: %d tokens -> %s\n", $input, scalar(@tokens), $output;

# GPT-2's tokenizer: split the text with GPT-2's pattern, write each piece's UTF-8 bytes as the
# byte-to-unicode characters of vocab.json, merge by rank (merges.txt), look the pieces up.
sub gpt2_tokens {
  my ($decoded) = @_;
  utf8::decode($decoded) or fail("$input: not UTF-8 text (use the byte mode, without --gpt2)");
  my $vocab = read_vocab($vocab_file);

  open(my $m, '<:raw', $merges_file) or fail("$merges_file: cannot open: $!");
  my %rank;
  my $line_no = 0;
  while (my $line = <$m>) {
    $line_no++;
    utf8::decode($line) or fail("$merges_file line $line_no: not UTF-8");
    $line =~ s/\r?\n$//;
    next if $line =~ /^#version/ || $line eq '';
    my @pair = split / /, $line;
    fail("$merges_file line $line_no: expected two symbols, got '$line'") unless @pair == 2;
    $rank{"$pair[0] $pair[1]"} = scalar(keys %rank) unless exists $rank{"$pair[0] $pair[1]"};
  }
  close $m;

  my @byte_char = byte_to_unicode();
  my %cache;
  my @ids;
  while ($decoded =~ /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/g) {
    my $piece = $&;
    my $ids = $cache{$piece} //= do {
      my $bytes = $piece;
      utf8::encode($bytes);
      my $word = join('', map { $byte_char[$_] } unpack('C*', $bytes));
      [map {
        exists $vocab->{$_} ? $vocab->{$_} : fail("$input: BPE piece '$_' is not in $vocab_file")
      } bpe($word, \%rank)];
    };
    push @ids, @$ids;
  }
  return @ids;
}

# vocab.json: one JSON object of token string => id, read without a JSON module.
sub read_vocab {
  my ($path) = @_;
  open(my $f, '<:raw', $path) or fail("$path: cannot open: $!");
  my $json = do { local $/; <$f> };
  close $f;
  utf8::decode($json) or fail("$path: not UTF-8");
  my %vocab;
  while ($json =~ /"((?:[^"\\]|\\.)*)"\s*:\s*(-?\d+)\s*[,}]/g) {
    my ($key, $id) = ($1, $2);
    fail("$path: id $id of \"$key\" does not fit a uint16 token") if $id < 0 || $id > 65535;
    $vocab{json_unescape($key)} = $id;
  }
  fail("$path: no \"token\": id pairs (expected GPT-2's vocab.json)") unless %vocab;
  return \%vocab;
}

# The characters of a JSON string's body: escapes replaced, surrogate pairs joined.
sub json_unescape {
  my ($s) = @_;
  my %simple = ('"' => '"', '\\' => '\\', '/' => '/', b => "\b", f => "\f", n => "\n", r => "\r", t => "\t");
  $s =~ s{\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})}
         {chr(0x10000 + ((hex($1) - 0xD800) << 10) + (hex($2) - 0xDC00))}ge;
  $s =~ s{\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))}{defined $1 ? chr(hex $1) : $simple{$2}}ge;
  return $s;
}

# GPT-2's reversible map of the 256 byte values to printable characters.
sub byte_to_unicode {
  my @printable = (ord('!') .. ord('~'), ord("\x{a1}") .. ord("\x{ac}"), ord("\x{ae}") .. ord("\x{ff}"));
  my %is_printable = map { $_ => 1 } @printable;
  my @chars;
  $chars[$_] = chr($_) for @printable;
  my $n = 0;
  for my $b (0 .. 255) {
    next if $is_printable{$b};
    $chars[$b] = chr(256 + $n++);
  }
  return @chars;
}

# Merges the adjacent pair of lowest rank until none of the pairs has one.
sub bpe {
  my ($word, $rank) = @_;
  my @symbols = split //, $word;
  while (@symbols > 1) {
    my ($best, $best_rank);
    for my $i (0 .. $#symbols - 1) {
      my $r = $rank->{"$symbols[$i] $symbols[$i + 1]"};
      ($best, $best_rank) = ("$symbols[$i] $symbols[$i + 1]", $r) if defined $r && (!defined $best_rank || $r < $best_rank);
    }
    last unless defined $best;
    my ($first, $second) = split / /, $best;
    my @merged;
    for (my $i = 0; $i < @symbols; $i++) {
      if ($i < $#symbols && $symbols[$i] eq $first && $symbols[$i + 1] eq $second) {
        push @merged, $first . $second;
        $i++;
      } else {
        push @merged, $symbols[$i];
      }
    }
    @symbols = @merged;
  }
  return @symbols;
}
