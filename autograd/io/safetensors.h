// safetensors.h — reading and writing tensors in the safetensors format.
//
// safetensors (https://github.com/huggingface/safetensors) is what PyTorch/timm checkpoints
// are shared in today, and it is simple enough to write by hand:
//
//   8 bytes    N, the header length, an unsigned little-endian 64-bit integer
//   N bytes    a JSON object, padded with spaces so that N is a multiple of 8:
//                {"__metadata__": {"key": "value", ...},                  (optional)
//                 "blocks.0.attn.qkv.weight": {"dtype": "F32", "shape": [48, 16],
//                                              "data_offsets": [begin, end]}, ...}
//   the rest   the raw little-endian bytes of every tensor, row-major; [begin, end) are byte
//              offsets into this part, and the tensors cover it exactly, without holes.
//
// The writer stores `real`: F32 in the float build, F64 in the double build. The reader
// accepts F32, F64 and I64 (label vectors written by PyTorch) and converts them to `real`.
// A corrupt or truncated file is reported, naming the file and the problem; it never
// crashes the reader.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

struct NamedTensors {
    std::vector<std::pair<std::string, Tensor>> tensors;  // in file order
    std::map<std::string, std::string> metadata;          // the header's "__metadata__"

    bool contains(const std::string& name) const;
    // The tensor with this name; throws naming it if absent.
    Tensor get(const std::string& name) const;
};

// Writes a temporary file beside `path` and renames it over `path` only once it is complete
// (atomic_write), so an interrupted or failed save never leaves a half-written file under `path`.
void save_safetensors(const std::string& path, const NamedTensors& named);
// Reads a regular file (a FIFO, a directory or a device is refused before it is opened).
// Every problem throws std::invalid_argument "load_safetensors: <path>: <problem>".
NamedTensors load_safetensors(const std::string& path);
// The same reader on the bytes of a file already in memory; `name` stands for the file in
// messages ("parse_safetensors: <name>: <problem>"). The fuzz tests drive this one.
NamedTensors parse_safetensors(const std::string& bytes, const std::string& name);

}  // namespace patchgrad
