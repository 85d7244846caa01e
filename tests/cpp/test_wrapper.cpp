// The C++ wrapper (bindings/cpp/timerwheel.hpp): RAII, callbacks owned through drop,
// movable handles, errors as exceptions. Same runner as the C tests.
#include "check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "support.hpp"
#include "timerwheel.hpp"

using namespace std::chrono_literals;
using timerwheel::Timer;
using timerwheel::Wheel;

namespace {

using test_support::eventually;
using test_support::small_config;

void test_after_runs_once_and_frees_the_callback() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    auto token = std::make_shared<int>(0);  // use_count tells whether the callback is alive
    auto start = std::chrono::steady_clock::now();
    std::atomic<bool> early{false};
    Timer t = wheel.after(20ms, [&runs, &early, start, token] {
        early = std::chrono::steady_clock::now() - start < 20ms;
        runs++;
    });
    CHECK(t.id() != 0);
    CHECK(eventually([&] { return token.use_count() == 1; }));
    CHECK(runs == 1 && !early);
    CHECK(!t.cancel());
    CHECK(!t.reset(10ms));
}

void test_cancel_frees_the_callback_unrun() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    auto token = std::make_shared<int>(0);
    Timer t = wheel.after(10s, [&runs, token] { runs++; });
    CHECK(token.use_count() == 2);
    CHECK(t.cancel());
    CHECK(eventually([&] { return token.use_count() == 1; }));
    CHECK(!t.cancel());
    CHECK(runs == 0);
}

void test_destructor_discards_pending_timers() {
    auto token = std::make_shared<int>(0);
    std::atomic<int> runs{0};
    {
        Wheel wheel(small_config());
        for (int i = 0; i < 10; i++) wheel.after(10s, [&runs, token] { runs++; });
        CHECK(token.use_count() == 11);
    }
    CHECK(token.use_count() == 1 && runs == 0);
}

void test_every_reset_and_cancel_sync() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    Timer t = wheel.every(5ms, [&runs] { runs++; }, TW_FIXED_DELAY);
    CHECK(eventually([&] { return runs >= 3; }));
    CHECK(t.reset(1h));
    CHECK(t.cancel_sync());
    int after = runs;
    std::this_thread::sleep_for(20ms);
    CHECK(runs == after);
    CHECK(!t.cancel_sync());
}

void test_cancel_from_own_callback_and_busy() {
    Wheel wheel(small_config());
    auto self = std::make_shared<Timer>();
    std::atomic<int> runs{0};
    std::atomic<int> busy{0};
    std::atomic<bool> ready{false};  // *self is assigned
    *self = wheel.every(2ms, [self_ptr = self.get(), &runs, &busy, &ready] {
        if (!ready) return;
        try {
            self_ptr->cancel_sync();
        } catch (const timerwheel::Error &e) {
            busy += e.status() == TW_ERR_BUSY;
        }
        if (++runs == 3) self_ptr->cancel();
    });
    ready = true;
    CHECK(eventually([&] { return runs == 3; }));
    std::this_thread::sleep_for(20ms);
    CHECK(runs == 3 && busy == 3);
}

void test_at_wall_clock() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    wheel.at(std::chrono::system_clock::now() + 10ms, [&runs] { runs++; });
    CHECK(eventually([&] { return runs == 1; }));
}

void test_errors_are_exceptions() {
    timerwheel::Config bad;
    bad.tick_us = 1;
    try {
        Wheel wheel(bad);
        CHECK(false);
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_INVALID);
        CHECK(std::string(e.what()).find("tw_create") != std::string::npos);
    }
    timerwheel::Config capped = small_config();
    capped.max_timers = 1;
    Wheel wheel(capped);
    auto token = std::make_shared<int>(0);
    wheel.after(1h, [token] {});
    try {
        wheel.after(1h, [token] {});
        CHECK(false);
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_FULL);
    }
    CHECK(token.use_count() == 2);  // the refused callback was freed by the wrapper, once
    try {
        wheel.after(1ms, std::function<void()>());
        CHECK(false);
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_INVALID);
    }
}

void test_exception_in_callback_is_counted_and_contained() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    wheel.after(1ms, [] { throw std::runtime_error("billing failed"); });
    Timer t = wheel.every(2ms, [&runs] {
        if (++runs == 2) throw 42;  // any type; the periodic timer goes on
    });
    CHECK(eventually([&] { return runs >= 4; }));
    CHECK(t.cancel_sync());
    CHECK(eventually([&] { return wheel.stats().callback_panics == 2; }));
    CHECK(tw_record_callback_failure() == TW_ERR_INVALID);  // not from a callback
    CHECK(wheel.stats().callback_panics == 2);
}

// Move-only state: counts the runs of its callback, and tells when it is freed.
struct Owned {
    std::atomic<int> *runs;
    std::atomic<int> *freed;
    ~Owned() { (*freed)++; }
};

void test_move_only_callables() {
    Wheel wheel(small_config());
    std::atomic<int> once{0}, periodic{0}, wall{0}, freed{0};
    auto callback = [&freed](std::atomic<int> &runs) {
        return [owned = std::unique_ptr<Owned>(new Owned{&runs, &freed})] { (*owned->runs)++; };
    };
    wheel.after(1ms, callback(once));
    Timer t = wheel.every(2ms, callback(periodic));
    wheel.at(std::chrono::system_clock::now() + 1ms, callback(wall));
    CHECK(eventually([&] { return once == 1 && wall == 1 && periodic >= 2; }));
    CHECK(t.cancel_sync());
    CHECK(eventually([&] { return freed == 3; }));  // each freed once, by the wheel
}

void test_moves() {
    Wheel a(small_config());
    tw_wheel *raw = a.get();
    Wheel b(std::move(a));
    CHECK(a.get() == nullptr && b.get() == raw);
    Wheel c(small_config());
    c = std::move(b);  // c's own wheel is destroyed
    CHECK(c.get() == raw);
    std::atomic<int> runs{0};
    Timer t = c.after(1h, [&runs] { runs++; });
    Timer moved = std::move(t);
    CHECK(moved.id() != 0);
    CHECK(moved.cancel());
    c.close();
    CHECK(c.get() == nullptr);
    c.close();  // nothing left to close
}

void test_manual_poll() {
    timerwheel::Config cfg;
    cfg.manual = 1;
    Wheel wheel(cfg);
    CHECK(!wheel.next_timeout());
    int runs = 0;  // runs on this thread, inside poll
    wheel.after(5ms, [&runs] { runs++; });
    auto next = wheel.next_timeout();
    CHECK(next && *next <= 6ms);
    std::size_t ran = 0;
    for (int i = 0; i < 1000 && runs == 0; i++) {  // the documented loop: sleep, then poll
        next = wheel.next_timeout();
        std::this_thread::sleep_for(next ? std::min(*next, std::chrono::milliseconds(10)) : 10ms);
        ran += wheel.poll();
    }
    CHECK(ran == 1 && runs == 1);
    tw_stats s = wheel.stats();
    CHECK(s.added == 1 && s.fired_one_shot == 1 && s.pending == 0);
    CHECK(s.size == sizeof s && s.span_ms > 0);  // the whole struct, span_ms included
    CHECK(wheel.stats_recent(std::chrono::seconds(60)).fired == 1);
    std::string text = wheel.metrics_text();
    CHECK(text.find("\ntimerwheel_timers_fired_total 1\n") != std::string::npos);
    CHECK(text.size() == std::strlen(text.c_str()));
}

void test_shared_wheel() {
    std::atomic<int> runs{0};
    {
        Wheel shared = Wheel::shared();
        CHECK(shared.get() == tw_default());
        shared.after(1ms, [&runs] { runs++; });
    }  // the handle goes, the shared wheel stays
    CHECK(eventually([&] { return runs == 1; }));
}

// A service owns its Wheel, and a timer's callback holds the last reference to the
// service: the Wheel is destroyed from inside its own callback. The pending timers are
// discarded (their callables freed) and nothing waits for itself.
struct Service {
    Wheel wheel{small_config()};
};

void test_destroyed_from_its_own_callback() {
    auto pending_freed = std::make_shared<std::atomic<int>>(0);
    std::atomic<bool> done{false};
    {
        auto service = std::make_shared<Service>();
        for (int i = 0; i < 10; i++) {
            auto guard = std::shared_ptr<void>(nullptr, [pending_freed](void *) { ++*pending_freed; });
            service->wheel.after(1h, [guard] {});
        }
        service->wheel.after(1ms, [&done, last = std::move(service)]() mutable {
            last.reset();  // ~Service, ~Wheel: on the wheel's own worker
            done = true;
        });
    }
    CHECK(eventually([&] { return done.load(); }));
    CHECK(eventually([&] { return pending_freed->load() == 10; }));
    std::this_thread::sleep_for(20ms);  // the wheel is freed as its worker lets go
}

// ---- the rest of the C API, and the owning handle -------------------------------------

using std::chrono::system_clock;
using timerwheel::UniqueTimer;

// 2024-01-01T00:00:00Z, where the virtual wheels start.
const system_clock::time_point start{std::chrono::milliseconds(1704067200000)};

Wheel virtual_wheel() {
    timerwheel::Config cfg;
    return Wheel(cfg.virtual_clock(start));
}

// The times (ms since `start`, on the wheel's clock) at which a callback ran.
struct RunLog {
    Wheel *wheel;
    std::vector<long long> at;
    void operator()() {
        at.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(wheel->now() - start)
                         .count());
    }
};

void test_bad_config_says_what_is_wrong() {
    timerwheel::Config cfg;
    cfg.tick_us = 50;
    bool thrown = false;
    try {
        Wheel wheel(cfg);
    } catch (const timerwheel::Error &e) {
        thrown = true;
        std::string what = e.what();
        CHECK(e.status() == TW_ERR_INVALID);
        CHECK(what.find("tw_create") == 0);
        CHECK(what.find(tw_config_check(&cfg)) != std::string::npos);  // the field, its range
        CHECK(what.find("tick") != std::string::npos);
    }
    CHECK(thrown);
}

void test_cancel_many_and_reset_many() {
    Wheel wheel = virtual_wheel();
    Wheel other = virtual_wheel();
    RunLog log{&wheel, {}};
    Timer a = wheel.after(10ms, std::ref(log)), b = wheel.after(10ms, std::ref(log));
    Timer gone = wheel.after(10ms, std::ref(log));
    Timer foreign = other.after(10ms, [] {});
    CHECK(gone.cancel());
    auto reset = wheel.reset_many({a, b, a, gone, foreign}, std::vector{100ms, 5ms, 50ms, 1ms, 1ms});
    CHECK((reset == std::vector<tw_status>{TW_OK, TW_OK, TW_OK, TW_ERR_NOT_FOUND, TW_ERR_NOT_FOUND}));
    CHECK(wheel.advance(60ms) == 2);
    CHECK((log.at == std::vector<long long>{5, 50}));  // the later delay of `a` holds
    Timer c = wheel.after(1h, [] {}), d = wheel.after(1h, [] {});
    auto cancelled = wheel.cancel_many({c, c, d, Timer(), foreign});
    CHECK((cancelled ==
           std::vector<tw_status>{TW_OK, TW_ERR_NOT_FOUND, TW_OK, TW_ERR_NOT_FOUND, TW_ERR_NOT_FOUND}));
    CHECK(wheel.cancel_many({}).empty());
    CHECK(other.advance(20ms) == 1);  // the foreign timer was neither moved nor cancelled
    bool thrown = false;
    try {
        wheel.reset_many({c}, std::vector<std::chrono::milliseconds>{});
    } catch (const timerwheel::Error &e) {
        thrown = e.status() == TW_ERR_INVALID;
    }
    CHECK(thrown);
}

void test_virtual_clock_and_every_with_a_first_delay() {
    Wheel wheel = virtual_wheel();
    CHECK(wheel.now() == start);
    RunLog log{&wheel, {}};
    Timer t = wheel.every(250ms, 1s, std::ref(log));
    CHECK(wheel.advance(2300ms) == 3);
    CHECK((log.at == std::vector<long long>{250, 1250, 2250}));
    CHECK(wheel.now() == start + 2300ms);
    CHECK(wheel.advance_to_next() == 1);
    CHECK(wheel.now() == start + 3250ms && log.at.back() == 3250);
    CHECK(t.cancel());
    CHECK(wheel.advance_to_next() == 0 && wheel.now() == start + 3250ms);
    Wheel real(small_config());
    bool refused = false;
    try {
        real.advance(1s);
    } catch (const timerwheel::Error &e) {
        refused = e.status() == TW_ERR_INVALID;
    }
    CHECK(refused);
}

void test_every_from_keeps_the_phase_with_either_policy() {
    // Anchored 2.5 s back, every second: the points -2.5, -1.5, -0.5 s passed, +0.5 s is next.
    Wheel once = virtual_wheel(), skip = virtual_wheel();
    RunLog once_log{&once, {}}, skip_log{&skip, {}};
    once.every_from(start - 2500ms, 1s, std::ref(once_log), TW_MISSED_RUN_ONCE);
    skip.every_from(start - 2500ms, 1s, std::ref(skip_log), TW_MISSED_SKIP);
    once.advance(1600ms);
    skip.advance(1600ms);
    CHECK((once_log.at == std::vector<long long>{0, 500, 1500}));
    CHECK((skip_log.at == std::vector<long long>{500, 1500}));
}

void test_durations_round_up_and_saturate() {
    using timerwheel::detail::to_ms;
    using std::chrono::duration;
    constexpr std::uint64_t most = UINT64_MAX;
    CHECK(to_ms(1ns) == 1 && to_ms(1500us) == 2 && to_ms(2ms) == 2 && to_ms(1h) == 3600000);
    CHECK(to_ms(-1ms) == 0 && to_ms(0s) == 0 && to_ms(duration<double>(NAN)) == 0);
    CHECK(to_ms(duration<double>(0.0015)) == 2 && to_ms(duration<double, std::milli>(2.0)) == 2);
    CHECK(to_ms(std::chrono::seconds::max()) == most && to_ms(std::chrono::hours::max()) == most);
    CHECK(to_ms(duration<double>(1e300)) == most && to_ms(duration<double>(INFINITY)) == most);
    CHECK(to_ms(duration<std::uint64_t, std::milli>(most)) == most);
    CHECK(to_ms(duration<std::uint64_t>(most)) == most);
    // A huge delay is held at the end of the clock's range: it does not fire now.
    Wheel wheel = virtual_wheel();
    int ran = 0;
    wheel.after(std::chrono::hours::max(), [&] { ran++; });
    wheel.after(duration<double>(1e300), [&] { ran++; });
    wheel.after(1500us, [&] { ran++; });
    CHECK(wheel.advance(1ms) == 0 && ran == 0);
    CHECK(wheel.advance(1ms) == 1 && ran == 1);
}

void test_time_points_round_up() {
    Wheel wheel = virtual_wheel();
    int at = 0, every = 0;
    wheel.at(start + 1500us, [&] { at++; });
    wheel.every_from(start + 2500us, 1s, [&] { every++; });
    wheel.advance(1ms);
    CHECK(at == 0);
    wheel.advance(1ms);
    CHECK(at == 1 && every == 0);
    wheel.advance(1ms);
    CHECK(every == 1);
}

void test_stats_recent_refuses_a_window_out_of_range() {
    Wheel wheel(small_config());
    for (auto window : {500ms, 61000ms, -1000ms}) {
        bool refused = false;
        try {
            wheel.stats_recent(window);
        } catch (const std::invalid_argument &) {
            refused = true;
        }
        CHECK(refused);
    }
    CHECK(wheel.stats_recent(1s).size == sizeof(tw_stats));
}

void test_export_holds_a_far_deadline_at_the_clocks_end() {
    Wheel wheel = virtual_wheel();
    wheel.after(std::chrono::hours(24 * 365 * 300), [] {});
    timerwheel::Export e = wheel.export_timers();
    CHECK(e.timers.size() == 1);
    if (e.timers.size() == 1) {
        CHECK(e.timers[0].due == std::chrono::system_clock::time_point::max());
        CHECK(e.timers[0].due_monotonic == std::chrono::nanoseconds::max());
    }
}

void test_export_timers() {
    Wheel wheel = virtual_wheel();
    Timer rate = wheel.every(250ms, 1s, [] {});
    Timer once = wheel.after(1500ms, [] {});
    Timer wall = wheel.at(start + 10s, [] {});
    wheel.after(50ms, [] {}).cancel();
    timerwheel::Export e = wheel.export_timers();
    CHECK(e.running == 0 && e.timers.size() == 3);
    if (e.timers.size() == 3) {
        const timerwheel::PendingTimer &r = e.timers[0], &o = e.timers[1], &w = e.timers[2];
        CHECK(r.id == rate.id() && r.kind == TW_TIMER_PERIODIC && r.period == 1s);
        CHECK(r.mode == TW_FIXED_RATE && r.due == start + 250ms && r.due_monotonic == 250ms);
        CHECK(o.id == once.id() && o.kind == TW_TIMER_ONE_SHOT && o.due == start + 1500ms);
        CHECK(w.id == wall.id() && w.kind == TW_TIMER_WALL_CLOCK && w.at == start + 10s);
    }
}

// On a virtual clock, so that the timer cannot fall due before the handle is destroyed
// (on a real one, a stall of the test's thread past its delay fired it first).
void test_unique_timer_deletes_its_timer_when_destroyed() {
    Wheel wheel = virtual_wheel();
    int runs = 0;
    auto token = std::make_shared<int>(0);
    {
        UniqueTimer t(wheel.after(50ms, [&runs, token] { runs++; }));
        CHECK(t.id() != 0 && token.use_count() == 2);
    }
    CHECK(token.use_count() == 1);  // deleted, its callable freed, before the scope ended
    CHECK(wheel.advance(100ms) == 0);  // past its point: nothing left to fire
    CHECK(runs == 0);
}

void test_unique_timer_waits_for_its_running_callback() {
    Wheel wheel(small_config());
    std::atomic<bool> started{false}, finished{false};
    {
        UniqueTimer t(wheel.after(1ms, [&started, &finished] {
            started = true;
            std::this_thread::sleep_for(100ms);
            finished = true;
        }));
        CHECK(eventually([&] { return started.load(); }));
    }
    CHECK(finished);  // what the callback used may go now
}

void test_unique_timer_moves_release_and_assignment() {
    Wheel wheel(small_config());
    auto a = std::make_shared<int>(0), b = std::make_shared<int>(0);
    UniqueTimer first(wheel.after(1h, [a] {}));
    UniqueTimer moved(std::move(first));
    CHECK(first.id() == 0 && moved.id() != 0 && a.use_count() == 2);
    first = UniqueTimer(wheel.after(1h, [b] {}));
    moved = std::move(first);  // the timer it held is deleted
    CHECK(a.use_count() == 1 && b.use_count() == 2);
    Timer kept = moved.release();
    { UniqueTimer gone(std::move(moved)); }
    CHECK(b.use_count() == 2);  // released: not deleted
    CHECK(kept.cancel());
    CHECK(eventually([&] { return b.use_count() == 1; }));
}

// A periodic callback that ends its own timer by destroying the handle that owns it:
// no waiting for itself, and it runs no more.
void test_unique_timer_destroyed_from_its_own_callback() {
    Wheel wheel(small_config());
    std::atomic<int> runs{0};
    std::atomic<bool> ready{false};
    auto owner = std::make_shared<std::optional<UniqueTimer>>();
    *owner = UniqueTimer(wheel.every(2ms, [slot = owner.get(), &runs, &ready] {
        if (ready && ++runs == 3) slot->reset();  // ~UniqueTimer inside its own callback
    }));
    ready = true;
    CHECK(eventually([&] { return runs == 3; }));
    std::this_thread::sleep_for(20ms);
    CHECK(runs == 3);
}

// Durable timers: handlers as std::function, tokens, errors with the store's message, and
// an unacknowledged fire delivered again, with its token, by the next wheel on the store.
struct Fires {
    std::mutex lock;
    std::vector<timerwheel::Token> tokens;
    std::vector<std::string> payloads;
};

timerwheel::Handler recording(Fires &fires, timerwheel::Ack answer) {
    return [&fires, answer](const timerwheel::Token &t, const std::string &payload) {
        std::lock_guard<std::mutex> guard(fires.lock);
        fires.tokens.push_back(t);
        fires.payloads.push_back(payload);
        return answer;
    };
}

std::string fresh_store(const char *tag) {
    std::string path = "/tmp/tw-cpp-durable-" + std::to_string(getpid()) + "-" + tag + ".db";
    std::remove(path.c_str());
    std::remove((path + "-wal").c_str());
    return path;
}

void test_durable_timers() {
    using timerwheel::Ack;
    auto start = std::chrono::system_clock::time_point(std::chrono::milliseconds(1704067200000));
    std::string path = fresh_store("basic");
    Fires fires;
    timerwheel::Token first;
    {
        Wheel wheel(timerwheel::Config().virtual_clock(start).durable(path.c_str(), TW_DURABLE_SYNC));
        wheel.handle("charge", recording(fires, Ack::later));
        wheel.handle("boom", [](const timerwheel::Token &, const std::string &) -> Ack {
            throw std::runtime_error("a handler that throws");
        });
        wheel.durable_open();
        wheel.durable_add(42, "charge", "session 42", start + 1s, 1s);
        try {
            wheel.durable_add(42, "charge", "", start + 5s);
            CHECK(!"an existing (key, name) was added again");
        } catch (const timerwheel::Error &e) {
            CHECK(e.status() == TW_ERR_EXISTS);
        }
        try {
            wheel.durable_delete(7, "charge");
            CHECK(!"a missing timer was deleted");
        } catch (const timerwheel::Error &e) {
            CHECK(e.status() == TW_ERR_NOT_FOUND);
        }
        wheel.durable_add(9, "boom", "", start + 1s);
        std::size_t ran = 0;
        tw_advance(wheel.get(), 2500, &ran);
        CHECK(fires.tokens.size() == 2);
        CHECK(fires.payloads.at(0) == "session 42");
        CHECK(fires.tokens.at(0).key == 42 && fires.tokens.at(0).name == "charge");
        CHECK(fires.tokens.at(1).occurrence == start + 2s);
        first = fires.tokens.at(0);
        CHECK(wheel.durable_ack({first}) == 1);
        CHECK(wheel.durable_ack({first}) == 0);
        wheel.durable_delete(42, "charge");
        CHECK(wheel.durable_flush() > 0);
        tw_durable_stats stats = wheel.durable_stats();
        CHECK(stats.acks == 1 && stats.pending_events == 0 && stats.durable_seq == stats.last_seq);
        CHECK(stats.last_error == TW_ERR_NOT_FOUND);
        std::uint64_t last = wheel.durable_stats().last_seq;
        CHECK(wheel.durable_flush_to(last) == last);
        bool refused = false;
        try {
            wheel.durable_flush_to(last + 1);
        } catch (const timerwheel::Error &) {
            refused = true;
        }
        CHECK(refused);
    }
    // The next wheel on the store: the fire acknowledged stays done; the second fire and
    // the one whose handler threw come back with their tokens.
    Fires again;
    Wheel wheel(timerwheel::Config().virtual_clock(start + 3s).durable(path.c_str(), TW_DURABLE_SYNC));
    wheel.handle("charge", recording(again, Ack::now));
    try {
        wheel.durable_open();
        CHECK(!"a stored timer without its handler was opened");
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_NO_HANDLER);
        CHECK(std::strstr(e.what(), "boom") != nullptr);
    }
    wheel.handle("boom", recording(again, Ack::now));
    wheel.durable_open();
    std::size_t ran = 0;
    tw_advance(wheel.get(), 10, &ran);
    CHECK(eventually([&] {
        std::lock_guard<std::mutex> guard(again.lock);
        return again.tokens.size() == 2;
    }));
    std::lock_guard<std::mutex> guard(again.lock);
    CHECK(std::find(again.tokens.begin(), again.tokens.end(), first) == again.tokens.end());
    CHECK(std::find(again.tokens.begin(), again.tokens.end(), fires.tokens.at(1)) !=
          again.tokens.end());
}

void test_durable_store_errors_carry_the_message() {
    std::string path = fresh_store("locked");
    Wheel owner(timerwheel::Config().durable(path.c_str()));
    owner.durable_open();
    Wheel second(timerwheel::Config().durable(path.c_str()));
    try {
        second.durable_open();
        CHECK(!"a second opener was let in");
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_STORE);
        CHECK(std::strstr(e.what(), "lock") != nullptr);
    }
    try {
        owner.handle("late", [](const timerwheel::Token &, const std::string &) {
            return timerwheel::Ack::now;
        });
        CHECK(!"a handler was registered after the open");
    } catch (const timerwheel::Error &e) {
        CHECK(e.status() == TW_ERR_BUSY);
    }
}

}  // namespace

// A durable handler that destroys its wheel: the handlers stay until the process ends, as
// one of them (this one) is still running.
std::atomic<bool> canary_freed{false};
struct Canary {
    ~Canary() { canary_freed = true; }
};

void test_wheel_destroyed_from_a_durable_handler_keeps_the_handlers() {
    using timerwheel::Ack;
    auto start = std::chrono::system_clock::time_point(std::chrono::milliseconds(1704067200000));
    std::string path = fresh_store("inside");
    auto wheel = std::make_unique<Wheel>(
        timerwheel::Config().virtual_clock(start).durable(path.c_str(), TW_DURABLE_SYNC));
    tw_wheel *raw = wheel->get();
    bool freed_while_running = true;
    auto canary = std::make_shared<Canary>();
    wheel->handle("close", [canary, &wheel, &freed_while_running](const timerwheel::Token &,
                                                                  const std::string &) {
        wheel.reset();  // ~Wheel from inside its own handler
        freed_while_running = canary_freed.load();
        return Ack::now;
    });
    canary.reset();
    wheel->durable_open();
    wheel->durable_add(1, "close", "", start + 1s);
    std::size_t ran = 0;
    tw_advance(raw, 2000, &ran);
    CHECK(wheel == nullptr && !freed_while_running);
}

int main() {
    RUN(test_after_runs_once_and_frees_the_callback);
    RUN(test_cancel_frees_the_callback_unrun);
    RUN(test_destructor_discards_pending_timers);
    RUN(test_every_reset_and_cancel_sync);
    RUN(test_cancel_from_own_callback_and_busy);
    RUN(test_at_wall_clock);
    RUN(test_errors_are_exceptions);
    RUN(test_exception_in_callback_is_counted_and_contained);
    RUN(test_move_only_callables);
    RUN(test_moves);
    RUN(test_manual_poll);
    RUN(test_shared_wheel);
    RUN(test_destroyed_from_its_own_callback);
    RUN(test_bad_config_says_what_is_wrong);
    RUN(test_virtual_clock_and_every_with_a_first_delay);
    RUN(test_cancel_many_and_reset_many);
    RUN(test_every_from_keeps_the_phase_with_either_policy);
    RUN(test_export_timers);
    RUN(test_durations_round_up_and_saturate);
    RUN(test_time_points_round_up);
    RUN(test_stats_recent_refuses_a_window_out_of_range);
    RUN(test_export_holds_a_far_deadline_at_the_clocks_end);
    RUN(test_unique_timer_deletes_its_timer_when_destroyed);
    RUN(test_unique_timer_waits_for_its_running_callback);
    RUN(test_unique_timer_moves_release_and_assignment);
    RUN(test_unique_timer_destroyed_from_its_own_callback);
    RUN(test_durable_timers);
    RUN(test_durable_store_errors_carry_the_message);
    RUN(test_wheel_destroyed_from_a_durable_handler_keeps_the_handlers);
    return check_summary("test_wrapper");
}
