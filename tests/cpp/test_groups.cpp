// The C++ wrapper's timer groups (bindings/cpp/timerwheel.hpp, timerwheel::Group): RAII
// deletes the group's timers, on_end runs once after every callable was freed, close()
// lets timers run on, a closed group refuses adds. Same runner as the C tests.
#include "check.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "support.hpp"
#include "timerwheel.hpp"

using namespace std::chrono_literals;
using timerwheel::Group;
using timerwheel::Wheel;

namespace {

using test_support::eventually;
using test_support::small_config;

void test_destroying_a_group_deletes_its_timers_and_ends_it_after_their_callables() {
    Wheel wheel(small_config());
    auto token = std::make_shared<int>(0);  // held by every callable of the group
    std::atomic<long> users_at_end{-1};
    std::atomic<int> runs{0};
    {
        Group session(wheel, [&users_at_end, weak = std::weak_ptr<int>(token)] {
            users_at_end = weak.use_count();
        });
        session.after(1h, [token] {});
        session.every(1h, [token] {});
        session.at(std::chrono::system_clock::now() + 1h, [token] {});
        session.after(0ms, [&runs, token] { runs++; });
        CHECK(eventually([&] { return runs == 1; }));
        CHECK(users_at_end == -1);  // open: the fired timer did not end it
    }
    CHECK(eventually([&] { return users_at_end != -1; }));
    CHECK(users_at_end == 1);  // only the test's own token was left
    CHECK(token.use_count() == 1);
}

void test_close_lets_the_timers_run_and_refuses_adds() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0}, ends{0};
    Group group(wheel, [&ends] { ends++; });
    group.after(5ms, [&runs] { runs++; });
    group.close();
    try {
        group.after(1ms, [] {});
        CHECK(false);
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_GROUP_CLOSED);
    }
    CHECK(eventually([&] { return ends == 1; }));
    CHECK(runs == 1);
    CHECK(!group.cancel());  // closed: nothing to delete
}

void test_a_moved_group_is_deleted_once() {
    Wheel wheel(small_config());
    std::atomic<int> ends{0};
    auto token = std::make_shared<int>(0);
    {
        Group a(wheel, [&ends] { ends++; });
        a.after(1h, [token] {});
        Group b(std::move(a));
        Group c(wheel);
        c = std::move(b);  // c's own group is deleted here, b's moves in
        CHECK(token.use_count() == 2);
    }
    CHECK(ends == 1);
    CHECK(token.use_count() == 1);
}

}  // namespace

int main() {
    RUN(test_destroying_a_group_deletes_its_timers_and_ends_it_after_their_callables);
    RUN(test_close_lets_the_timers_run_and_refuses_adds);
    RUN(test_a_moved_group_is_deleted_once);
    return check_summary("test_groups (C++)");
}
