// The C++ wrapper of a fleet node (timerwheel::Fleet) against a private PostgreSQL started
// by timerwheel-fleet's fleet-test-server (make test-cpp builds it): a timer fires once
// with its token, an ack after another node took the shard is fenced, the missed points of
// a shard nobody held coalesce when asked, errors carry the library's message and never
// the password. Same runner as the C tests.
#include "check.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "support.hpp"
#include "timerwheel.hpp"

using namespace std::chrono_literals;
using timerwheel::Ack;
using timerwheel::Fleet;
using timerwheel::FleetToken;

namespace {

using test_support::eventually;

// The helper process: its connection string on its first line, then one SQL statement per
// line on its stdin, one answer line ("ok VALUE" or "error ...") on its stdout.
class Server {
public:
    Server() {
        int in[2], out[2];
        if (pipe(in) != 0 || pipe(out) != 0) return;
        pid_ = fork();
        if (pid_ == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[1]);
            close(out[0]);
            const char *path = getenv("TW_FLEET_TEST_SERVER");
            if (path == nullptr) path = "target/release/fleet-test-server";
            execl(path, path, "4", static_cast<char *>(nullptr));
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        to_ = fdopen(in[1], "w");
        from_ = fdopen(out[0], "r");
        std::string first = line();
        if (first.rfind("conninfo ", 0) == 0) conninfo_ = first.substr(9);
        else unavailable_ = first;
    }
    ~Server() {
        if (to_ != nullptr) fclose(to_);
        if (from_ != nullptr) fclose(from_);
        if (pid_ > 0) waitpid(pid_, nullptr, 0);
    }

    const std::string &conninfo() const { return conninfo_; }
    const std::string &unavailable() const { return unavailable_; }

    // The first column of the first row ("" if none; "error ..." on an error).
    std::string sql(const std::string &statement) {
        fprintf(to_, "%s\n", statement.c_str());
        fflush(to_);
        std::string answer = line();
        return answer.rfind("ok ", 0) == 0 ? answer.substr(3) : answer;
    }

private:
    std::string line() {
        char buf[1024] = "";
        if (from_ == nullptr || fgets(buf, sizeof buf, from_) == nullptr) return "";
        std::string s(buf);
        if (!s.empty() && s.back() == '\n') s.pop_back();
        return s;
    }

    pid_t pid_ = -1;
    FILE *to_ = nullptr;
    FILE *from_ = nullptr;
    std::string conninfo_, unavailable_;
};

Server *server;

timerwheel::FleetSettings quick() {
    timerwheel::FleetSettings s;
    s.ttl_ms = 2000;
    s.window_ms = 10000;
    s.poll_ms = 100;
    return s;
}

// A node whose handler (of "charge" unless named) records its fires and leaves the ack to
// the test.
struct Recording {
    std::mutex mu;
    std::vector<std::pair<FleetToken, std::string>> fired;

    void attach(Fleet &fleet, const std::string &name = "charge") {
        fleet.handle(name, [this](const FleetToken &token, const std::string &payload) {
            std::lock_guard<std::mutex> lock(mu);
            fired.emplace_back(token, payload);
            return Ack::later;
        });
    }
    std::size_t count() {
        std::lock_guard<std::mutex> lock(mu);
        return fired.size();
    }
};

void test_a_timer_fires_once_with_its_token() {
    Recording rec;
    Fleet fleet(quick());
    rec.attach(fleet);
    fleet.join(server->conninfo(), "cpp-a");
    // A second add of a pending (key, name) is refused: checked on a timer an hour away, as
    // one due soon may have fired (and ended) before the second add, which then adds anew.
    auto later = std::chrono::system_clock::now() + 1h;
    CHECK(fleet.add(70, "charge", "cents=25", later));
    try {
        fleet.add(70, "charge", "", later);
        CHECK(!"a second add of (70, charge) was accepted");
    } catch (const timerwheel::Error &e) {
        CHECK_STATUS(e.status(), TW_ERR_EXISTS);
    }
    CHECK(fleet.remove(70, "charge"));
    auto due = std::chrono::system_clock::now() + 300ms;
    CHECK(fleet.add(7, "charge", "cents=25", due));
    CHECK(eventually([&] { return rec.count() == 1; }));
    std::this_thread::sleep_for(600ms);
    CHECK(rec.count() == 1);
    FleetToken token = rec.fired.at(0).first;
    CHECK(token.key == 7 && token.name == "charge" && rec.fired[0].second == "cents=25");
    CHECK(token.occurrence == std::chrono::time_point_cast<std::chrono::milliseconds>(due) ||
          token.occurrence == std::chrono::time_point_cast<std::chrono::milliseconds>(due) + 1ms);
    CHECK(std::to_string(token.epoch) ==
          server->sql("SELECT epoch FROM tw_fleet_shards WHERE shard = " + std::to_string(token.shard)));
    CHECK(fleet.ack({token}) == 1);
    CHECK(server->sql("SELECT count(*) FROM tw_fleet_fires WHERE key = 7") == "0");
    fleet.leave();
    CHECK(server->sql("SELECT count(*) FROM tw_fleet_shards WHERE owner = 'cpp-a'") == "0");
}

void test_an_ack_after_another_node_took_the_shard_is_fenced() {
    Recording rec;
    Fleet fleet(quick());
    rec.attach(fleet);
    fleet.join(server->conninfo(), "cpp-a");
    fleet.add(9, "charge", "", std::chrono::system_clock::now());
    CHECK(eventually([&] { return rec.count() == 1; }));
    if (rec.count() != 1) return;
    FleetToken token = rec.fired[0].first;
    // Another node takes the shard: the lease row moves to it under the next epoch.
    server->sql("UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1, "
                "lease_until = now() + interval '1 hour' WHERE shard = " + std::to_string(token.shard));
    try {
        fleet.ack({token});
        CHECK(!"an ack under a lost lease was accepted");
    } catch (const timerwheel::Error &e) {
        CHECK_STATUS(e.status(), TW_ERR_FENCED);
        CHECK(std::string(e.what()).find("shard " + std::to_string(token.shard)) != std::string::npos);
    }
    CHECK(server->sql("SELECT count(*) FROM tw_fleet_fires WHERE key = 9") == "1");
    server->sql("UPDATE tw_fleet_shards SET owner = NULL, lease_until = '-infinity'");
}

constexpr auto period = 200ms;

// The points a node with `settings` fires (at least `n` of them, waited for) of a periodic
// timer whose first 10 and a half periods passed while no node held its shard; and when
// the node joined.
std::pair<std::vector<std::chrono::system_clock::time_point>, std::chrono::system_clock::time_point>
points_after_a_gap(const timerwheel::FleetSettings &settings, std::uint64_t key, std::size_t n) {
    std::string timer = "WHERE key = " + std::to_string(key);
    {
        Recording unused;
        Fleet adder(quick());
        unused.attach(adder, "tick");
        adder.join(server->conninfo(), "cpp-m0");
        adder.add(key, "tick", "", std::chrono::system_clock::now() + 1h, period);
    }  // left: the shard has no owner
    // Its points pass as if the timer had been added long ago.
    auto first = std::chrono::time_point_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now() - 21 * period / 2);
    server->sql("UPDATE tw_fleet_timers SET due_ms = " +
                std::to_string(first.time_since_epoch().count()) + " " + timer);
    Recording rec;
    Fleet fleet(settings);
    rec.attach(fleet, "tick");
    auto joined = std::chrono::system_clock::now();
    fleet.join(server->conninfo(), "cpp-m1");
    CHECK(eventually([&] { return rec.count() >= n; }));
    fleet.remove(key, "tick");
    server->sql("DELETE FROM tw_fleet_fires " + timer);
    std::vector<std::chrono::system_clock::time_point> points;
    std::lock_guard<std::mutex> lock(rec.mu);
    for (const auto &fire : rec.fired) {
        CHECK(fire.first.occurrence >= first && (fire.first.occurrence - first) % period == 0ms);
        points.push_back(fire.first.occurrence);
    }
    return {points, joined};
}

void test_missed_points_coalesce_into_one_fire_for_the_latest() {
    auto coalesce = quick();
    coalesce.missed(TW_MISSED_COALESCE);
    auto [latest, joined] = points_after_a_gap(coalesce, 41, 1);
    CHECK(!latest.empty() && latest[0] > joined - period);

    auto [each, joined_each] = points_after_a_gap(quick(), 42, 11);
    CHECK(each.size() >= 11 && each[0] < joined_each - 10 * period);
    for (std::size_t i = 1; i < each.size(); i++) CHECK(each[i] - each[i - 1] == period);

    try {
        auto unknown = quick();
        unknown.missed_points = TW_MISSED_COALESCE + 1;
        Fleet refused(unknown);
        CHECK(!"an unknown missed_points was accepted");
    } catch (const timerwheel::Error &e) {
        CHECK_STATUS(e.status(), TW_ERR_INVALID);
    }
}

void test_errors_carry_the_message_without_the_password() {
    Fleet fleet(quick());
    Fleet moved = std::move(fleet);
    CHECK(fleet.get() == nullptr && moved.get() != nullptr);
    try {
        moved.join("host=127.0.0.1 port=1 password=s3cret-pw connect_timeout=2", "cpp-a");
        CHECK(!"a join to a closed port succeeded");
    } catch (const timerwheel::Error &e) {
        CHECK_STATUS(e.status(), TW_ERR_UNREACHABLE);
        CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
    }
    try {
        moved.handle("charge", nullptr);
        CHECK(!"an empty handler was accepted");
    } catch (const timerwheel::Error &e) {
        CHECK_STATUS(e.status(), TW_ERR_INVALID);
    }
}

}  // namespace

int main() {
    Server s;
    if (s.conninfo().empty()) {
        printf("test_fleet (C++): skipped: %s\n",
               s.unavailable().empty() ? "fleet-test-server did not start" : s.unavailable().c_str());
        return s.unavailable().rfind("unavailable ", 0) == 0 ? 0 : 1;
    }
    server = &s;
    RUN(test_a_timer_fires_once_with_its_token);
    RUN(test_an_ack_after_another_node_took_the_shard_is_fenced);
    RUN(test_missed_points_coalesce_into_one_fire_for_the_latest);
    RUN(test_errors_carry_the_message_without_the_password);
    return check_summary("test_fleet (C++)");
}
