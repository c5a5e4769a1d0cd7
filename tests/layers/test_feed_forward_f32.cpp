// test_feed_forward_f32.cpp — the MLP's hidden size in the float32 build, where `real` is float:
// the ratio must not pass through it (layers/feed_forward.cpp says why).
#include "patchgrad/layers/feed_forward.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"

using namespace patchgrad;

TEST_CASE("mlp_hidden_dim: 640 x 2.6 is timm's int(640 * 2.6) = 1664 in the float32 build too", "[layer:FeedForward]") {
    CHECK(mlp_hidden_dim(640, 0, 2.6) == 1664);  // a float 2.6 would give 1663
    CHECK(mlp_hidden_dim(10, 0, 2.6) == 26);
    ViTConfig c = vit_config("cifar-tiny");
    c.dim = 640;
    c.mlp_dim = 0;
    c.mlp_ratio = 2.6;
    CHECK(c.mlp_hidden() == 1664);
}
