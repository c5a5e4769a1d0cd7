// test_metrics.cpp — metrics.csv (vit/train/metrics.h): rows read back as written, foreign files
// are named, a failed write leaves no temporary file.
#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("metrics csv: rows read back as written, a foreign file is named", "[trainer][metrics]") {
    TempDir dir;
    EpochRecord r;
    r.epoch = 1;
    r.step = 352;
    r.lr = 0.00125;
    r.train_loss = 1.5;
    r.train_acc = 0.25;
    r.eval_set = "validation";
    r.eval_loss = 1.25;
    r.eval_acc = 0.5;
    r.epoch_seconds = 12.5;
    r.elapsed_seconds = 13;
    r.img_per_s = 812.5;
    EpochRecord r2 = r;
    r2.epoch = 2;
    write_metrics_csv(dir.file("m.csv"), {r, r2});
    const std::vector<EpochRecord> back = read_metrics_csv(dir.file("m.csv"));
    REQUIRE(back.size() == 2);
    CHECK(back[1].epoch == 2);
    CHECK(back[0].lr == 0.00125);
    CHECK(back[0].eval_set == "validation");
    CHECK(back[0].img_per_s == 812.5);
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());

    write_bytes(dir.file("bad.csv"), std::string(kMetricsHeader) + "\n1,2,3\n");
    require_error([&] { read_metrics_csv(dir.file("bad.csv")); }, {"bad.csv", "line 2", "3 fields"});
    write_bytes(dir.file("other.csv"), "a,b\n");
    require_error([&] { read_metrics_csv(dir.file("other.csv")); }, {"other.csv", "header"});
    require_error([&] { write_metrics_csv(dir.file("no/such/dir/m.csv"), {r}); }, {"no/such/dir/m.csv.", ".tmp'"});
}
