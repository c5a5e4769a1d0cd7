// deflate.cpp — a DEFLATE compressor (LZ77 + Huffman codes) and the zlib framing around it,
// for the PNGs png.cpp writes.
//
// The compressor follows RFC 1951 ("DEFLATE") and the structure of zlib's deflate, cut
// down to what is worth its lines here:
//   1. LZ77 (RFC 1951 section 4): every position is looked up in a hash table of the
//      3-byte strings seen in the last 32 KiB; a chain of earlier positions with the same
//      hash gives the match candidates. A bounded chain keeps the time linear, and a
//      one-step lazy evaluation lets a longer match starting one byte later win.
//   2. The (literal | length, distance) tokens are cut into blocks, and each block is
//      written the cheapest of three ways (section 3.2.3): stored (BTYPE 00, for data that
//      does not compress), fixed Huffman codes (01, no code table to send) or dynamic
//      Huffman codes (10, built from the block's own symbol counts).
#include "patchgrad/vit/pictures/deflate.h"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <utility>

#include "patchgrad/vit/pictures/deflate_tables.h"

namespace patchgrad {

namespace {

// ---- DEFLATE ----------------------------------------------------------------------------

using namespace deflate;

constexpr int kMaxChain = 64;           // chain candidates tried per position: speed vs ratio
constexpr size_t kLazyLimit = 32;       // a match this long is taken without looking one byte ahead
constexpr size_t kBlockTokens = 16384;  // tokens per block: each block gets codes fitted to it

// The index i with base[i] <= value < base[i + 1]: the symbol's offset within its alphabet.
template <size_t N>
int symbol_index(const std::array<uint16_t, N>& base, size_t value) {
    return static_cast<int>(std::upper_bound(base.begin(), base.end(), value) - base.begin()) - 1;
}

// ---- LZ77 ------------------------------------------------------------------------------

// A literal byte (length 0, value = the byte) or a back-reference (length 3..258, value =
// distance 1..32768): the output of LZ77 and the input of the Huffman stage.
struct Token {
    uint16_t length;
    uint16_t value;
};

struct Match {
    size_t length = 0, distance = 0;
};

// Finds the longest earlier occurrence of the bytes at a position. head_[h] is the latest
// position whose 3 bytes hash to h, prev_[p % kWindow] the position before p with the same
// hash: together, one chain per hash through the window, newest first (zlib's scheme).
class MatchFinder {
public:
    MatchFinder(const uint8_t* data, size_t size)
        : data_(data), size_(size), head_(kHashSize, kNone), prev_(kWindow, kNone) {}

    // The longest match for the bytes at `pos` among the previous kWindow positions, or
    // length 0 if none reaches kMinMatch. Positions must be asked in increasing order.
    Match longest(size_t pos) {
        insert_until(pos);
        const size_t limit = std::min(kMaxMatch, size_ - pos);
        Match best;
        if (limit < kMinMatch) return best;
        size_t candidate = head_[hash(pos)];
        for (int tries = 0; candidate != kNone && pos - candidate <= kWindow && tries < kMaxChain; ++tries) {
            // A longer match must agree at best.length: one compare rejects most candidates.
            if (data_[candidate + best.length] == data_[pos + best.length]) {
                size_t n = 0;
                while (n < limit && data_[candidate + n] == data_[pos + n]) ++n;
                if (n > best.length) {
                    best = {n, pos - candidate};
                    if (n == limit) break;
                }
            }
            candidate = prev_[candidate % kWindow];
        }
        if (best.length < kMinMatch) best = {};
        return best;
    }

private:
    static constexpr size_t kHashBits = 15, kHashSize = size_t(1) << kHashBits;
    static constexpr size_t kNone = SIZE_MAX;

    size_t hash(size_t pos) const {
        const uint32_t key = uint32_t(data_[pos]) << 16 | uint32_t(data_[pos + 1]) << 8 | data_[pos + 2];
        return (key * 2654435761u) >> (32 - kHashBits);  // Knuth's multiplicative hash
    }

    // Adds every position before `pos` not yet in the chains (also those inside matches,
    // so later matches can point into them).
    void insert_until(size_t pos) {
        for (; next_ < pos && next_ + kMinMatch <= size_; ++next_) {
            const size_t h = hash(next_);
            prev_[next_ % kWindow] = head_[h];
            head_[h] = next_;
        }
    }

    const uint8_t* data_;
    size_t size_;
    std::vector<size_t> head_, prev_;
    size_t next_ = 0;
};

std::vector<Token> lz77(const uint8_t* data, size_t size) {
    std::vector<Token> tokens;
    MatchFinder finder(data, size);
    size_t pos = 0;
    Match match = finder.longest(0);
    while (pos < size) {
        if (match.length == 0) {
            tokens.push_back({0, data[pos]});
            match = finder.longest(++pos);
            continue;
        }
        // Lazy evaluation: if the match one byte later is longer, this byte goes out as a
        // literal and that match is considered next instead.
        if (match.length < kLazyLimit && pos + 1 < size) {
            const Match next = finder.longest(pos + 1);
            if (next.length > match.length) {
                tokens.push_back({0, data[pos]});
                ++pos;
                match = next;
                continue;
            }
        }
        tokens.push_back({static_cast<uint16_t>(match.length), static_cast<uint16_t>(match.distance)});
        pos += match.length;
        match = finder.longest(pos);
    }
    return tokens;
}

// ---- Huffman codes (RFC 1951 section 3.2.2) --------------------------------------------

// The code lengths of a Huffman code for symbols with these counts, none longer than
// max_bits; unused symbols get length 0. At least two symbols get a code, so the code is
// complete (a lone symbol would have a 0-bit code, which inflaters reject).
std::vector<uint8_t> huffman_lengths(std::vector<uint64_t> counts, int max_bits) {
    size_t used = static_cast<size_t>(std::count_if(counts.begin(), counts.end(), [](uint64_t c) { return c > 0; }));
    for (size_t s = 0; used < 2 && s < counts.size(); ++s)
        if (counts[s] == 0) {
            counts[s] = 1;
            ++used;
        }
    std::vector<uint8_t> lengths(counts.size(), 0);
    for (;;) {
        // Huffman's algorithm: merge the two rarest nodes until one tree is left; a leaf's
        // code length is its depth. Nodes [0, leaves) are the used symbols.
        std::vector<size_t> symbol, parent;
        using Entry = std::pair<uint64_t, size_t>;  // (count, node); ties broken by node: deterministic
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
        for (size_t s = 0; s < counts.size(); ++s)
            if (counts[s] > 0) {
                queue.push({counts[s], symbol.size()});
                symbol.push_back(s);
            }
        parent.assign(symbol.size(), 0);
        while (queue.size() > 1) {
            const Entry a = queue.top();
            queue.pop();
            const Entry b = queue.top();
            queue.pop();
            parent[a.second] = parent[b.second] = parent.size();
            queue.push({a.first + b.first, parent.size()});
            parent.push_back(0);
        }
        const size_t root = parent.size() - 1;
        int deepest = 0;
        for (size_t leaf = 0; leaf < symbol.size(); ++leaf) {
            int depth = 0;
            for (size_t node = leaf; node != root; node = parent[node]) ++depth;
            lengths[symbol[leaf]] = static_cast<uint8_t>(depth);
            deepest = std::max(deepest, depth);
        }
        if (deepest <= max_bits) return lengths;
        // Too deep: halve the counts (keeping every used symbol used) and build again. The
        // counts flatten out, so the tree gets shallower; the code is slightly worse than
        // an optimal length-limited one, and the case is rare.
        for (uint64_t& c : counts)
            if (c > 0) c = (c + 1) / 2;
    }
}

// A code ready to write: the bits reversed, because deflate packs Huffman codes starting
// from their most significant bit into a stream that is otherwise filled from bit 0.
struct Code {
    uint16_t bits = 0;
    uint8_t length = 0;
};

// The canonical code for the lengths (3.2.2): shorter codes first, equal lengths in symbol
// order, so the lengths alone describe the code.
std::vector<Code> canonical_codes(const std::vector<uint8_t>& lengths) {
    std::array<uint16_t, kMaxCodeBits + 1> count{}, next{};
    for (uint8_t l : lengths) ++count[l];
    count[0] = 0;
    for (int bits = 1; bits <= kMaxCodeBits; ++bits)
        next[bits] = static_cast<uint16_t>((next[bits - 1] + count[bits - 1]) << 1);
    std::vector<Code> codes(lengths.size());
    for (size_t s = 0; s < lengths.size(); ++s) {
        const int l = lengths[s];
        if (l == 0) continue;
        uint16_t code = next[l]++, reversed = 0;
        for (int i = 0; i < l; ++i, code >>= 1) reversed = static_cast<uint16_t>(reversed << 1 | (code & 1));
        codes[s] = {reversed, static_cast<uint8_t>(l)};
    }
    return codes;
}

// ---- writing blocks ----------------------------------------------------------------------

// Appends bit fields to a byte vector, least significant bit first (RFC 1951 section 3.1.1).
class BitWriter {
public:
    explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
    void put(uint32_t value, int count) {
        buffer_ |= uint64_t(value) << filled_;
        filled_ += count;
        for (; filled_ >= 8; filled_ -= 8, buffer_ >>= 8) out_.push_back(static_cast<uint8_t>(buffer_));
    }
    void put(Code code) { put(code.bits, code.length); }
    // Pads with zero bits to the next byte boundary, as a stored block's LEN must start there.
    void align() {
        if (filled_ > 0) put(0, 8 - filled_);
    }

private:
    std::vector<uint8_t>& out_;
    uint64_t buffer_ = 0;
    int filled_ = 0;
};

// A block's symbol counts: literal/length symbols 0..285 and distance symbols 0..29.
struct SymbolCounts {
    std::vector<uint64_t> litlen = std::vector<uint64_t>(kLitLenSymbols, 0);
    std::vector<uint64_t> dist = std::vector<uint64_t>(kDistSymbols, 0);
    uint64_t extra_bits = 0;  // the length and distance extra bits: the same under any code
};

SymbolCounts count_symbols(const Token* tokens, size_t n) {
    SymbolCounts c;
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i].length == 0) {
            ++c.litlen[tokens[i].value];
            continue;
        }
        const int l = symbol_index(kLengthBase, tokens[i].length), d = symbol_index(kDistBase, tokens[i].value);
        ++c.litlen[257 + l];
        ++c.dist[d];
        c.extra_bits += kLengthExtra[l] + kDistExtra[d];
    }
    ++c.litlen[kEndOfBlock];
    return c;
}

uint64_t coded_bits(const std::vector<uint64_t>& counts, const std::vector<uint8_t>& lengths) {
    uint64_t bits = 0;
    for (size_t s = 0; s < counts.size(); ++s) bits += counts[s] * lengths[s];
    return bits;
}

// A dynamic block's code table (3.2.7): the literal/length and distance code lengths, as
// one sequence run-length coded with symbols 0-15 (a length), 16 (repeat the previous
// length 3-6 times), 17 (3-10 zeros) and 18 (11-138 zeros), themselves Huffman coded
// with the "code-length code".
struct DynamicHeader {
    int hlit = 0, hdist = 0, hclen = 0;             // how many lengths are sent of each table
    std::vector<std::pair<uint8_t, uint8_t>> runs;  // (symbol 0..18, its extra-bits value)
    std::vector<uint8_t> cl_lengths;                // the code-length code, [19]

    DynamicHeader(const std::vector<uint8_t>& litlen, const std::vector<uint8_t>& dist) {
        // Trailing unused symbols need not be sent, down to 257 and 1 codes.
        hlit = kLitLenSymbols;
        while (hlit > 257 && litlen[size_t(hlit) - 1] == 0) --hlit;
        hdist = kDistSymbols;
        while (hdist > 1 && dist[size_t(hdist) - 1] == 0) --hdist;
        std::vector<uint8_t> all(litlen.begin(), litlen.begin() + hlit);
        all.insert(all.end(), dist.begin(), dist.begin() + hdist);

        for (size_t i = 0; i < all.size();) {
            const uint8_t len = all[i];
            size_t run = 1;
            while (i + run < all.size() && all[i + run] == len) ++run;
            i += run;
            if (len == 0) {
                for (; run >= 11; run -= std::min<size_t>(run, 138))
                    runs.push_back({18, static_cast<uint8_t>(std::min<size_t>(run, 138) - 11)});
                if (run >= 3) {
                    runs.push_back({17, static_cast<uint8_t>(run - 3)});
                    run = 0;
                }
            } else {
                runs.push_back({len, 0});  // 16 repeats the previous length, so send it once first
                for (--run; run >= 3; run -= std::min<size_t>(run, 6))
                    runs.push_back({16, static_cast<uint8_t>(std::min<size_t>(run, 6) - 3)});
            }
            for (; run > 0; --run) runs.push_back({len, 0});
        }

        std::vector<uint64_t> counts(kCodeLengthSymbols, 0);
        for (const auto& r : runs) ++counts[r.first];
        cl_lengths = huffman_lengths(counts, kMaxCodeLengthBits);
        hclen = kCodeLengthSymbols;
        while (hclen > 4 && cl_lengths[kCodeLengthOrder[size_t(hclen) - 1]] == 0) --hclen;
    }

    // The repeat count after symbols 16, 17, 18 takes 2, 3, 7 bits.
    static int extra_bits(uint8_t symbol) { return symbol == 16 ? 2 : symbol == 17 ? 3 : symbol == 18 ? 7 : 0; }

    uint64_t bits() const {
        uint64_t b = 5 + 5 + 4 + 3 * uint64_t(hclen);
        for (const auto& r : runs) b += cl_lengths[r.first] + extra_bits(r.first);
        return b;
    }

    void write(BitWriter& out) const {
        out.put(uint32_t(hlit - 257), 5);
        out.put(uint32_t(hdist - 1), 5);
        out.put(uint32_t(hclen - 4), 4);
        for (int i = 0; i < hclen; ++i) out.put(cl_lengths[kCodeLengthOrder[size_t(i)]], 3);
        const std::vector<Code> codes = canonical_codes(cl_lengths);
        for (const auto& [symbol, extra] : runs) {
            out.put(codes[symbol]);
            out.put(extra, extra_bits(symbol));
        }
    }
};

void write_tokens(BitWriter& out, const Token* tokens, size_t n, const std::vector<Code>& litlen,
                  const std::vector<Code>& dist) {
    for (size_t i = 0; i < n; ++i) {
        const Token t = tokens[i];
        if (t.length == 0) {
            out.put(litlen[t.value]);
            continue;
        }
        const int l = symbol_index(kLengthBase, t.length), d = symbol_index(kDistBase, t.value);
        out.put(litlen[size_t(257 + l)]);
        out.put(uint32_t(t.length - kLengthBase[size_t(l)]), kLengthExtra[size_t(l)]);
        out.put(dist[size_t(d)]);
        out.put(uint32_t(t.value - kDistBase[size_t(d)]), kDistExtra[size_t(d)]);
    }
    out.put(litlen[kEndOfBlock]);
}

// One block holding tokens [0, n), which decode to the `size` bytes at `raw`, written as
// whichever of stored, fixed and dynamic Huffman (3.2.3) takes the fewest bits. A block
// header is BFINAL (1 bit) then BTYPE (2 bits).
void write_block(BitWriter& out, const Token* tokens, size_t n, const uint8_t* raw, size_t size, bool final_block) {
    const SymbolCounts counts = count_symbols(tokens, n);
    const std::vector<uint8_t> fixed_litlen = fixed_litlen_lengths(), fixed_dist = fixed_dist_lengths();
    const std::vector<uint8_t> litlen = huffman_lengths(counts.litlen, kMaxCodeBits);
    const std::vector<uint8_t> dist = huffman_lengths(counts.dist, kMaxCodeBits);
    const DynamicHeader header(litlen, dist);

    const uint64_t fixed_bits =
        3 + coded_bits(counts.litlen, fixed_litlen) + coded_bits(counts.dist, fixed_dist) + counts.extra_bits;
    const uint64_t dynamic_bits =
        3 + header.bits() + coded_bits(counts.litlen, litlen) + coded_bits(counts.dist, dist) + counts.extra_bits;
    const uint64_t stored_pieces = std::max<size_t>(1, (size + kMaxStoredBlock - 1) / kMaxStoredBlock);
    const uint64_t stored_bits = stored_pieces * (3 + 7 + 32) + 8 * uint64_t(size);  // header, padding, LEN, NLEN

    if (stored_bits <= std::min(fixed_bits, dynamic_bits)) {
        // Stored (3.2.4): after the header, skip to a byte boundary, then LEN and its one's
        // complement NLEN (little-endian) and LEN bytes as they are; LEN is 16 bits, so a
        // long block is several stored blocks.
        size_t at = 0;
        do {
            const size_t len = std::min(kMaxStoredBlock, size - at);
            out.put(final_block && at + len == size ? 1 : 0, 1);
            out.put(0, 2);
            out.align();
            out.put(uint32_t(len), 16);
            out.put(uint32_t(~len & 0xFFFF), 16);
            for (size_t i = 0; i < len; ++i) out.put(raw[at + i], 8);
            at += len;
        } while (at < size);
    } else if (fixed_bits <= dynamic_bits) {
        out.put(final_block ? 1 : 0, 1);
        out.put(1, 2);
        write_tokens(out, tokens, n, canonical_codes(fixed_litlen), canonical_codes(fixed_dist));
    } else {
        out.put(final_block ? 1 : 0, 1);
        out.put(2, 2);
        header.write(out);
        write_tokens(out, tokens, n, canonical_codes(litlen), canonical_codes(dist));
    }
}

}  // namespace

uint32_t adler32(const uint8_t* data, size_t size) {
    constexpr uint32_t kMod = 65521;  // the largest prime below 2^16
    // 5552 is the most bytes after which b cannot yet overflow 32 bits (zlib's NMAX), so the
    // slow modulo runs once per 5552 bytes instead of twice per byte.
    constexpr size_t kBlock = 5552;
    uint32_t a = 1, b = 0;
    for (size_t start = 0; start < size; start += kBlock) {
        const size_t end = std::min(size, start + kBlock);
        for (size_t i = start; i < end; ++i) {
            a += data[i];
            b += a;
        }
        a %= kMod;
        b %= kMod;
    }
    return (b << 16) | a;
}

std::vector<uint8_t> zlib_compress(const uint8_t* data, size_t size) {
    // RFC 1950 header: CMF 0x78 is deflate with a 32 KiB window; FLG 0x9C makes 0x789C a
    // multiple of 31 (FCHECK) and says "default compression level" (FLEVEL 2), as zlib writes.
    std::vector<uint8_t> z = {0x78, 0x9C};
    const std::vector<Token> tokens = lz77(data, size);
    BitWriter bits(z);
    size_t first = 0, raw_at = 0;
    do {
        const size_t n = std::min(kBlockTokens, tokens.size() - first);
        size_t raw_size = 0;
        for (size_t i = first; i < first + n; ++i) raw_size += tokens[i].length == 0 ? 1 : tokens[i].length;
        write_block(bits, tokens.data() + first, n, data + raw_at, raw_size, first + n == tokens.size());
        first += n;
        raw_at += raw_size;
    } while (first < tokens.size());
    bits.align();
    const uint32_t adler = adler32(data, size);
    for (int shift = 24; shift >= 0; shift -= 8) z.push_back(static_cast<uint8_t>(adler >> shift));  // big-endian
    return z;
}

}  // namespace patchgrad
