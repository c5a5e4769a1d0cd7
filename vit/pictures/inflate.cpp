// inflate.cpp — the DEFLATE decompressor and its zlib framing; the format is in inflate.h.
//
// Huffman codes are decoded with one look-up table per code: indexed by the next `bits`
// bits of the stream (the longest code's length), each entry holds the symbol whose code
// those bits start with and that code's length. Codes are sent most significant bit first
// into a stream read from bit 0, so a code's table index is its bits reversed, and every
// index that ends in it (all values of the bits beyond the code) points to it.
#include "patchgrad/vit/pictures/inflate.h"

#include <array>

#include "patchgrad/autograd/check.h"
#include "patchgrad/vit/pictures/deflate.h"
#include "patchgrad/vit/pictures/deflate_tables.h"

namespace patchgrad {

namespace {

using namespace deflate;

// Bits of data[0, size), least significant first (RFC 1951 section 3.1.1), from byte
// `start` on. Reading past the end yields zero bits rather than touching memory; every read
// then checks that it stayed within the data, so a truncated stream is an error where it
// ran out.
class BitReader {
public:
    BitReader(const uint8_t* data, size_t size, size_t start, const std::string& what)
        : data_(data), size_(size), what_(what), next_(start) {}

    uint32_t bits(int n) {
        refill();
        const uint32_t v = static_cast<uint32_t>(buffer_ & ((uint64_t(1) << n) - 1));
        consume(n);
        return v;
    }
    // The next 15 bits without consuming them: enough for any Huffman code.
    uint32_t peek() {
        refill();
        return static_cast<uint32_t>(buffer_ & 0x7FFF);
    }
    void consume(int n) {
        buffer_ >>= n;
        filled_ -= n;
        check(bits_read() <= 8 * uint64_t(size_), what_, ": truncated: the zlib stream ends inside a block (after ",
              size_, " bytes)");
    }
    // Drops the bits left in the current byte (a stored block's LEN starts on a byte).
    void align() { consume(filled_ % 8); }
    // The byte the next bit is read from (after align(), the next whole byte).
    size_t byte_position() const { return static_cast<size_t>((bits_read() + 7) / 8); }
    // Moves to byte `at`, after align(), for bytes read directly.
    void seek(size_t at) {
        next_ = at;
        buffer_ = 0;
        filled_ = 0;
    }

private:
    uint64_t bits_read() const { return 8 * uint64_t(next_) - uint64_t(filled_); }
    void refill() {
        for (; filled_ <= 56; filled_ += 8, ++next_) buffer_ |= uint64_t(next_ < size_ ? data_[next_] : 0) << filled_;
    }

    const uint8_t* data_;
    size_t size_;
    const std::string& what_;
    size_t next_;  // the next byte to load into the buffer (may run past size_: zeros)
    uint64_t buffer_ = 0;
    int filled_ = 0;  // valid bits in buffer_
};

// A canonical Huffman code (3.2.2) as a look-up table, see the top of the file.
class HuffmanTable {
public:
    // lengths[s] = the code length of symbol s, 0 if unused. Throws for lengths that are no
    // prefix code (over-subscribed). An incomplete code is accepted (a block of literals
    // only sends a distance code without symbols, or with one); a bit string outside it is
    // an error when it is met.
    HuffmanTable(const uint8_t* lengths, size_t count, const char* name, const std::string& what) {
        std::array<int, kMaxCodeBits + 1> per_length{};
        for (size_t s = 0; s < count; ++s) ++per_length[lengths[s]];
        per_length[0] = 0;
        int left = 1;  // codes still free at the current length
        for (int len = 1; len <= kMaxCodeBits; ++len) {
            left = 2 * left - per_length[size_t(len)];
            check(left >= 0, what, ": the ", name, " code is over-subscribed (its lengths are no prefix code)");
            if (per_length[size_t(len)] > 0) bits_ = len;
        }
        std::array<uint32_t, kMaxCodeBits + 2> next{};  // the first code of each length
        for (int len = 1; len <= kMaxCodeBits; ++len)
            next[size_t(len + 1)] = (next[size_t(len)] + uint32_t(per_length[size_t(len)])) << 1;
        table_.assign(size_t(1) << bits_, 0);
        for (size_t s = 0; s < count; ++s) {
            const int len = lengths[s];
            if (len == 0) continue;
            uint32_t code = next[size_t(len)]++, reversed = 0;
            for (int i = 0; i < len; ++i, code >>= 1) reversed = reversed << 1 | (code & 1);
            for (uint32_t index = reversed; index < table_.size(); index += uint32_t(1) << len)
                table_[index] = static_cast<uint16_t>(s << 4 | uint32_t(len));
        }
    }

    int decode(BitReader& in, const char* name, const std::string& what) const {
        const uint16_t entry = table_[in.peek() & (table_.size() - 1)];
        const int len = entry & 15;
        check(len > 0, what, ": bad Huffman code in the ", name, " code at byte ", in.byte_position());
        in.consume(len);
        return entry >> 4;
    }

private:
    int bits_ = 0;                 // the longest code
    std::vector<uint16_t> table_;  // [2^bits_]: symbol << 4 | code length, 0 for no code
};

class Inflater {
public:
    Inflater(const uint8_t* data, size_t size, size_t max_output, const std::string& what, InflateTrace* trace)
        : in(data, size, 2, what), data_(data), size_(size), max_output_(max_output), what_(what), trace_(trace) {}

    // The blocks, from byte 2 (after the zlib header) to the end of the final one.
    std::vector<uint8_t> blocks() {
        static const std::vector<uint8_t> fixed_litlen = fixed_litlen_lengths(), fixed_dist = fixed_dist_lengths();
        static const HuffmanTable fixed_litlen_code(fixed_litlen.data(), fixed_litlen.size(), "fixed", "");
        static const HuffmanTable fixed_dist_code(fixed_dist.data(), fixed_dist.size(), "fixed", "");
        for (bool final_block = false; !final_block;) {
            final_block = in.bits(1) == 1;
            const int type = static_cast<int>(in.bits(2));
            if (trace_) trace_->block_types.push_back(type);
            if (type == 0) {
                stored_block();
            } else if (type == 1) {
                coded_block(fixed_litlen_code, fixed_dist_code);
            } else {
                check(type == 2, what_, ": a block in byte ", in.byte_position(), " has the reserved type 3");
                dynamic_block();
            }
        }
        return std::move(out_);
    }

    // Where the Adler-32 starts: the byte after the final block.
    size_t end_of_blocks() {
        in.align();
        return in.byte_position();
    }

private:
    void make_room(size_t more) {
        check(more <= max_output_ - out_.size(), what_, ": the data decompresses to more than ", max_output_, " bytes");
    }

    void stored_block() {
        in.align();
        const uint32_t len = in.bits(16), nlen = in.bits(16);
        const size_t at = in.byte_position();
        check((len ^ nlen) == 0xFFFF, what_, ": stored block at byte ", at - 4, ": LEN ", len, " and NLEN ", nlen,
              " are not each other's complement");
        check(len <= size_ - at, what_, ": truncated: a stored block of ", len, " bytes at byte ", at,
              " but the stream has ", size_, " bytes");
        make_room(len);
        out_.insert(out_.end(), data_ + at, data_ + at + len);
        in.seek(at + len);
    }

    void coded_block(const HuffmanTable& litlen, const HuffmanTable& dist) {
        for (;;) {
            const int symbol = litlen.decode(in, "literal/length", what_);
            if (symbol < 256) {
                make_room(1);
                out_.push_back(static_cast<uint8_t>(symbol));
                if (trace_) ++trace_->literals;
                continue;
            }
            if (symbol == kEndOfBlock) return;
            check(symbol < 257 + int(kLengthBase.size()), what_, ": length symbol ", symbol, " in byte ",
                  in.byte_position(), " does not exist (257-285)");
            const size_t l = size_t(symbol - 257);
            const size_t length = kLengthBase[l] + in.bits(kLengthExtra[l]);
            const int d = dist.decode(in, "distance", what_);
            check(d < kDistSymbols, what_, ": distance symbol ", d, " in byte ", in.byte_position(),
                  " does not exist (0-29)");
            const size_t distance = kDistBase[size_t(d)] + in.bits(kDistExtra[size_t(d)]);
            check(distance <= out_.size(), what_, ": a match in byte ", in.byte_position(), " reaches ", distance,
                  " bytes back, but only ", out_.size(), " bytes came before it");
            make_room(length);
            // Byte by byte: a match may overlap the bytes it writes (distance < length: a run).
            for (size_t k = 0; k < length; ++k) out_.push_back(out_[out_.size() - distance]);
            if (trace_) trace_->matches.push_back({length, distance});
        }
    }

    // Reads the block's literal/length and distance codes (3.2.7), then its symbols.
    void dynamic_block() {
        const size_t hlit = in.bits(5) + 257, hdist = in.bits(5) + 1, hclen = in.bits(4) + 4;
        check(hlit <= size_t(kLitLenSymbols) && hdist <= size_t(kDistSymbols), what_, ": a dynamic block in byte ",
              in.byte_position(), " declares ", hlit, " literal/length and ", hdist,
              " distance codes (at most 286 and 30)");
        std::array<uint8_t, kCodeLengthSymbols> cl_lengths{};
        for (size_t i = 0; i < hclen; ++i) cl_lengths[kCodeLengthOrder[i]] = static_cast<uint8_t>(in.bits(3));
        const HuffmanTable cl(cl_lengths.data(), cl_lengths.size(), "code-length", what_);
        std::vector<uint8_t> lengths;
        while (lengths.size() < hlit + hdist) {
            const int symbol = cl.decode(in, "code-length", what_);
            if (symbol < 16) {
                lengths.push_back(static_cast<uint8_t>(symbol));
                continue;
            }
            check(symbol != 16 || !lengths.empty(), what_, ": code length repeat (16) in byte ", in.byte_position(),
                  " with no length before it");
            const uint8_t value = symbol == 16 ? lengths.back() : 0;
            const size_t repeat = symbol == 16 ? 3 + in.bits(2) : symbol == 17 ? 3 + in.bits(3) : 11 + in.bits(7);
            check(lengths.size() + repeat <= hlit + hdist, what_, ": code lengths in byte ", in.byte_position(),
                  " repeat past the ", hlit + hdist, " the block declared");
            lengths.insert(lengths.end(), repeat, value);
        }
        check(lengths[kEndOfBlock] > 0, what_, ": a dynamic block ending in byte ", in.byte_position(),
              " has no end-of-block code");
        const HuffmanTable litlen(lengths.data(), hlit, "literal/length", what_);
        const HuffmanTable dist(lengths.data() + hlit, hdist, "distance", what_);
        coded_block(litlen, dist);
    }

    BitReader in;
    const uint8_t* data_;
    size_t size_, max_output_;
    const std::string& what_;
    InflateTrace* trace_;
    std::vector<uint8_t> out_;
};

}  // namespace

std::vector<uint8_t> zlib_decompress(const uint8_t* data, size_t size, size_t max_output, const std::string& what,
                                     InflateTrace* trace) {
    check(size >= 6, what, ": truncated: ", size, " bytes cannot hold a zlib stream (at least 6)");
    const uint8_t cmf = data[0], flg = data[1];
    check((cmf & 0x0F) == 8 && (cmf >> 4) <= 7, what, ": not a zlib stream of deflate data (CMF byte ", int(cmf),
          ", expected method 8 with a window of at most 32 KiB)");
    check((cmf * 256 + flg) % 31 == 0, what, ": zlib header check failed (CMF ", int(cmf), ", FLG ", int(flg),
          " is not a multiple of 31)");
    check((flg & 0x20) == 0, what, ": the zlib stream needs a preset dictionary, which PNG never uses");

    Inflater inflater(data, size, max_output, what, trace);
    std::vector<uint8_t> out = inflater.blocks();
    const size_t at = inflater.end_of_blocks();
    check(at + 4 <= size, what, ": truncated: the stream ends before its Adler-32 checksum");
    const uint32_t stored =
        uint32_t(data[at]) << 24 | uint32_t(data[at + 1]) << 16 | uint32_t(data[at + 2]) << 8 | uint32_t(data[at + 3]);
    const uint32_t computed = adler32(out.data(), out.size());
    check(stored == computed, what, ": Adler-32 mismatch: the stream says ", stored, ", the data gives ", computed,
          " (the data is damaged)");
    return out;
}

}  // namespace patchgrad
