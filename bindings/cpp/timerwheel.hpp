/*
 * timerwheel for C++17: a header-only RAII wrapper over the C ABI (timerwheel.h).
 *
 *     timerwheel::Config cfg;              // the C defaults (tw_config_init)
 *     cfg.max_workers = 4;
 *     timerwheel::Wheel wheel(cfg);        // throws timerwheel::Error on failure
 *     auto t = wheel.after(std::chrono::milliseconds(50), [] { bill(); });
 *     t.reset(std::chrono::seconds(1));    // false when it is no longer pending
 *     t.cancel();                          // true when it was pending
 *     timerwheel::UniqueTimer idle(wheel.after(30s, [] { hang_up(); }));
 *     // ~UniqueTimer deletes its timer (and waits for its callback running elsewhere)
 *     // ~Wheel destroys the wheel: waits for running callbacks, discards pending ones
 *     // (from inside one of its own callbacks it stops the wheel without waiting)
 *
 * Also: every(first, period, f) with a first delay; every_from(first, period, f, missed),
 * a fixed-rate timer anchored at a wall-clock start (tw_add_periodic_at); export_timers()
 * (tw_export); cancel_many() and reset_many() (tw_delete_many, tw_reset_many); on a virtual clock (Config::virtual_clock) advance(), advance_to_next() and
 * now(). A config out of range throws an Error whose what() carries tw_config_check's
 * message. docs/contract.md is the contract; this header states only its differences.
 *
 * A callback is any callable taking no arguments, move-only ones included (a lambda that
 * owns a std::unique_ptr): it is moved to the heap at add and freed through the timer's
 * drop function, after a one-shot ran, when the timer is cancelled, or when the wheel is
 * destroyed. An exception escaping a callback cannot cross the C boundary: it is caught,
 * counted in the wheel's callback_panics (tw_record_callback_failure) and goes no further;
 * the wheel goes on. Durations and time points round up to whole milliseconds (never
 * early; a duration past the library's range is held at its end). A Timer is a plain
 * handle: dropping it does not cancel the timer, and it must not be used after its Wheel
 * is destroyed. A UniqueTimer owns its timer: declare it after the Wheel (members are
 * destroyed in reverse order), so that it is destroyed first.
 */
#ifndef TIMERWHEEL_HPP
#define TIMERWHEEL_HPP

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <ratio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "timerwheel.h"

namespace timerwheel {

/* A failed call: what() names the C function and the status, then what was wrong when the
 * library says more (a config out of range: "tw_create: invalid argument: tick 50µs is out
 * of range: 100µs..=1s"); status() is the tw_status. */
class Error : public std::runtime_error {
public:
    Error(tw_status status, const char *call)
        : std::runtime_error(std::string(call) + ": " + tw_status_str(status)), status_(status) {}
    Error(tw_status status, const char *call, const char *detail)
        : std::runtime_error(std::string(call) + ": " + tw_status_str(status) + ": " + detail),
          status_(status) {}

    tw_status status() const noexcept { return status_; }

private:
    tw_status status_;
};

/* The C configuration, filled with the defaults; change the fields you need. */
struct Config : tw_config {
    Config() noexcept : tw_config() { tw_config_init(this); }

    /* Puts the wheel on a virtual clock that starts at `start` (to the millisecond): time
     * moves only by Wheel::advance and Wheel::advance_to_next. For tests of timer logic. */
    Config &virtual_clock(std::chrono::system_clock::time_point start) noexcept {
        clock = TW_CLOCK_VIRTUAL;
        virtual_start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
            start.time_since_epoch()).count();
        return *this;
    }

    /* Keeps durable timers in the store at `path` (copied by the Wheel's constructor). */
    Config &durable(const char *path, tw_durability mode = TW_DURABLE_ASYNC) noexcept {
        store_path = path;
        durability = static_cast<std::uint32_t>(mode);
        return *this;
    }
};

/* One pending timer of Wheel::export_timers (tw_timer_info). Timers are known by their
 * id: keep what each one stands for (a session's key) by the id its add returned. A time
 * past what std::chrono holds (nanoseconds reach 292 years; system_clock, the year 2262)
 * is held at its type's max(). */
struct PendingTimer {
    tw_timer_id id = 0;
    tw_timer_kind kind = TW_TIMER_ONE_SHOT;
    tw_period_mode mode = TW_FIXED_RATE;       /* periodic timers */
    std::chrono::nanoseconds period{0};        /* periodic timers */
    std::chrono::nanoseconds due_monotonic{0}; /* its next run since the wheel was created */
    std::chrono::system_clock::time_point due; /* the same on the wheel's wall clock (ms) */
    std::chrono::system_clock::time_point at;  /* wall-clock timers: the time added for */
};

/* What Wheel::export_timers gives: the pending timers of one instant in deadline order,
 * and how many periodic timers were left out because their callback was running. */
struct Export {
    std::vector<PendingTimer> timers;
    std::size_t running = 0;
};

/* Durable timers (docs/contract.md, "Durable timers"). A fire's token: store it with the
 * fire's effect under a unique constraint, then Wheel::durable_ack it. */
struct Token {
    std::uint64_t key = 0;
    std::string name;
    std::chrono::system_clock::time_point occurrence; /* the scheduled deadline (ms) */
    std::uint64_t epoch = 0;

    bool operator==(const Token &o) const {
        return key == o.key && name == o.name && occurrence == o.occurrence && epoch == o.epoch;
    }
};

/* What a handler tells the store: acknowledge its fire now, or later (durable_ack). */
enum class Ack { later = TW_ACK_LATER, now = TW_ACK_NOW };

/* A durable timer's handler: the fire's token and the timer's payload. An exception from
 * it cannot unwind into C: it is swallowed and the fire stays unacknowledged (delivered
 * again after a restart). */
using Handler = std::function<Ack(const Token &, const std::string &payload)>;

namespace detail {

inline void check(tw_status status, const char *call) {
    if (status != TW_OK) throw Error(status, call);
}

/* Throws for a failure, with the message `explain` writes (tw_durable_error,
 * tw_fleet_error) when there is one. */
template <class Explain>
void check_explained(tw_status status, const char *call, Explain explain) {
    if (status == TW_OK) return;
    char message[512] = "";
    std::size_t needed = 0;
    if (explain(message, sizeof message, &needed) == TW_OK && message[0])
        throw Error(status, call, message);
    throw Error(status, call);
}

/* A Unix time in milliseconds as a time point, held at the clock's ends where the clock
 * cannot hold it (system_clock's nanoseconds reach 2262). */
inline std::chrono::system_clock::time_point from_unix_ms(std::int64_t ms) {
    using std::chrono::system_clock;
    constexpr auto top = std::chrono::duration_cast<std::chrono::milliseconds>(
        system_clock::time_point::max().time_since_epoch()).count();
    constexpr auto bottom = std::chrono::duration_cast<std::chrono::milliseconds>(
        system_clock::time_point::min().time_since_epoch()).count();
    if (ms >= top) return system_clock::time_point::max();
    if (ms <= bottom) return system_clock::time_point::min();
    return system_clock::time_point(std::chrono::milliseconds(ms));
}

/* A time point as a Unix time in milliseconds, rounded up: never early. */
inline std::int64_t to_unix_ms(std::chrono::system_clock::time_point t) {
    return std::chrono::ceil<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

/* Nanoseconds of the library (unsigned), held at nanoseconds::max(). */
inline std::chrono::nanoseconds from_ns(std::uint64_t ns) {
    constexpr auto top = static_cast<std::uint64_t>(std::chrono::nanoseconds::max().count());
    return std::chrono::nanoseconds(ns >= top ? std::chrono::nanoseconds::max().count()
                                              : static_cast<std::int64_t>(ns));
}

/* tw_export's function: copies each timer into the Export at ctx. An allocation failure
 * cannot unwind into C: it is kept and rethrown after tw_export returned. */
struct Exporting {
    Export result;
    bool out_of_memory = false;

    static void one(void *ctx, const tw_timer_info *info) noexcept {
        auto *e = static_cast<Exporting *>(ctx);
        PendingTimer t;
        t.id = info->id;
        t.kind = static_cast<tw_timer_kind>(info->kind);
        t.mode = static_cast<tw_period_mode>(info->mode);
        t.period = from_ns(info->period_ns);
        t.due_monotonic = from_ns(info->due_ns);
        t.due = from_unix_ms(info->due_unix_ms);
        t.at = from_unix_ms(info->at_unix_ms);
        try {
            e->result.timers.push_back(t);
        } catch (const std::bad_alloc &) {
            e->out_of_memory = true;
        }
    }
};

/* Milliseconds, rounded up; negative durations (and NaN) are 0, and a duration past
 * UINT64_MAX ms is UINT64_MAX ms (the library holds such a deadline at the end of its
 * clock's range): never early, never wrapped. Exact for every unit that is a whole number
 * of milliseconds or a whole fraction of one (nanoseconds to hours). */
template <class Rep, class Period>
std::uint64_t to_ms(std::chrono::duration<Rep, Period> d) {
    constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
    using InMs = std::ratio_divide<Period, std::milli>;
    if (!(d > d.zero())) return 0;
    if constexpr (std::is_floating_point_v<Rep> || (InMs::num != 1 && InMs::den != 1)) {
        long double ms = std::ceil(static_cast<long double>(d.count()) * InMs::num / InMs::den);
        return ms < static_cast<long double>(most) ? static_cast<std::uint64_t>(ms) : most;
    } else {
        auto count = static_cast<std::uint64_t>(d.count());
        constexpr auto num = static_cast<std::uint64_t>(InMs::num);
        constexpr auto den = static_cast<std::uint64_t>(InMs::den);
        if (den == 1) return count > most / num ? most : count * num;
        return count / den + (count % den != 0);
    }
}

/* Keeps `owned` until the process exits, reachable (no leak is reported). */
template <class T>
void keep_for_the_process(std::vector<std::unique_ptr<T>> owned) noexcept {
    static std::mutex lock;
    static std::vector<std::unique_ptr<T>> kept;
    std::lock_guard<std::mutex> hold(lock);
    try {
        for (auto &one : owned) kept.push_back(std::move(one));
    } catch (...) {
        for (auto &one : owned) one.release();  // out of memory: leaked, never freed early
    }
}

/* The C callback of a callable of type F: an exception cannot unwind into C, so it is
 * counted in callback_panics instead. */
template <class F>
void run(tw_timer_id, void *callable) noexcept {
    try {
        (*static_cast<F *>(callable))();
    } catch (...) {
        tw_record_callback_failure();
    }
}

template <class F>
void drop(void *callable) noexcept {
    delete static_cast<F *>(callable);
}

/* Whether `f` holds nothing to call: an empty std::function, a null function pointer. */
template <class F>
bool empty(const F &f) {
    if constexpr (std::is_constructible_v<bool, const F &>) {
        return !static_cast<bool>(f);
    } else {
        return false;
    }
}

/* Moves (or copies) `f` to the heap and adds a timer for it with
 * `add(cb, user_data, drop, &id)`; the wheel owns it once the add succeeded, and it is
 * freed here if the add is refused. Returns the timer's id. */
template <class F, class Add>
tw_timer_id add(F &&f, Add add, const char *call) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn &>, "a timer callback takes no arguments");
    if (empty(f)) throw Error(TW_ERR_INVALID, "empty callback");
    auto callable = std::make_unique<Fn>(std::forward<F>(f));
    tw_timer_id id = 0;
    check(add(&run<Fn>, static_cast<void *>(callable.get()), &drop<Fn>, &id), call);
    callable.release();  // the wheel owns it now
    return id;
}

}  // namespace detail

/* A handle to a timer: its wheel and its id. Copyable and movable; does not own the timer. */
class Timer {
public:
    Timer() noexcept = default;
    Timer(tw_wheel *wheel, tw_timer_id id) noexcept : wheel_(wheel), id_(id) {}

    tw_timer_id id() const noexcept { return id_; }

    /* Stops the timer: true if it was pending (see tw_delete). */
    bool cancel() noexcept { return wheel_ != nullptr && tw_delete(wheel_, id_) == TW_OK; }

    /* Stops the timer and waits for its callback running on another thread. Throws
     * Error(TW_ERR_BUSY) from the timer's own callback. */
    bool cancel_sync() {
        if (wheel_ == nullptr) return false;
        tw_status s = tw_delete_sync(wheel_, id_);
        if (s == TW_ERR_BUSY) throw Error(s, "tw_delete_sync");
        return s == TW_OK;
    }

    /* Re-arms the timer `delay` from now: false if it is no longer pending. */
    template <class Rep, class Period>
    bool reset(std::chrono::duration<Rep, Period> delay) noexcept {
        return wheel_ != nullptr && tw_reset(wheel_, id_, detail::to_ms(delay)) == TW_OK;
    }

private:
    tw_wheel *wheel_ = nullptr;
    tw_timer_id id_ = 0;
};

namespace detail {

/* The ids of `timers`, for the batched calls. */
inline std::vector<tw_timer_id> ids_of(const std::vector<Timer> &timers) {
    std::vector<tw_timer_id> ids;
    ids.reserve(timers.size());
    for (const Timer &t : timers) ids.push_back(t.id());
    return ids;
}

}  // namespace detail

/* A timer that belongs to its handle, as a std::unique_ptr owns its object: move-only, and
 * destroying it (or assigning another timer to it) deletes its timer and waits for its
 * callback running on another thread (tw_delete_sync), so that what the callback uses
 * may go right after; from the timer's own callback it deletes without waiting. Made from
 * what the Wheel's adds return: UniqueTimer idle(wheel.after(30s, ...)). Destroy it before
 * its Wheel. */
class UniqueTimer {
public:
    UniqueTimer() noexcept = default;
    explicit UniqueTimer(Timer timer) noexcept : timer_(timer) {}
    UniqueTimer(const UniqueTimer &) = delete;
    UniqueTimer &operator=(const UniqueTimer &) = delete;
    UniqueTimer(UniqueTimer &&other) noexcept : timer_(other.release()) {}
    UniqueTimer &operator=(UniqueTimer &&other) noexcept {
        if (this != &other) {
            end();
            timer_ = other.release();
        }
        return *this;
    }
    ~UniqueTimer() { end(); }

    tw_timer_id id() const noexcept { return timer_.id(); }
    /* The plain handle, still owned here. */
    Timer get() const noexcept { return timer_; }
    /* Gives the timer up: it is no longer deleted here. */
    Timer release() noexcept { return std::exchange(timer_, Timer()); }

    bool cancel() noexcept { return timer_.cancel(); }
    bool cancel_sync() { return timer_.cancel_sync(); }
    template <class Rep, class Period>
    bool reset(std::chrono::duration<Rep, Period> delay) noexcept {
        return timer_.reset(delay);
    }

private:
    void end() noexcept {
        Timer timer = release();
        try {
            timer.cancel_sync();
        } catch (const Error &) {  // TW_ERR_BUSY: from its own callback
            timer.cancel();
        }
    }

    Timer timer_;
};

/* Owns a tw_wheel: non-copyable, movable; the destructor destroys it. */
class Wheel {
public:
    Wheel() : Wheel(Config()) {}

    /* Throws Error(TW_ERR_INVALID) with tw_config_check's message for a field out of
     * range, Error for any other failure of tw_create. */
    explicit Wheel(const tw_config &config) {
        if (const char *wrong = tw_config_check(&config)) throw Error(TW_ERR_INVALID, "tw_create", wrong);
        detail::check(tw_create(&config, &wheel_), "tw_create");
    }

    /* The process-wide shared wheel (tw_default). Destroying this handle leaves the shared
     * wheel running: tw_destroy refuses it. */
    static Wheel shared() {
        tw_wheel *w = tw_default();
        if (w == nullptr) throw Error(TW_ERR_INTERNAL, "tw_default");
        return Wheel(w);
    }

    Wheel(const Wheel &) = delete;
    Wheel &operator=(const Wheel &) = delete;
    Wheel(Wheel &&other) noexcept
        : wheel_(std::exchange(other.wheel_, nullptr)), handlers_(std::move(other.handlers_)) {}
    Wheel &operator=(Wheel &&other) noexcept {
        if (this != &other) {
            reset_handle();
            wheel_ = std::exchange(other.wheel_, nullptr);
            handlers_ = std::move(other.handlers_);
        }
        return *this;
    }

    /* Destroys the wheel (tw_destroy). From inside one of its own callbacks or drops
     * (a callback that releases the last reference to the object owning the Wheel), where
     * tw_destroy would wait for itself, it stops the wheel without waiting
     * (tw_destroy_nowait): pending timers are discarded now, and the wheel is freed when
     * the running callbacks have returned. */
    ~Wheel() { reset_handle(); }

    /* Destroys the wheel now and reports a failure; the Wheel is empty afterwards. */
    void close() {
        if (wheel_ != nullptr) {
            detail::check(tw_destroy(wheel_), "tw_destroy");
            wheel_ = nullptr;
        }
    }

    /* Registers `handler` for the durable timers named `name`, before durable_open (the
     * config names store_path). The Wheel keeps it until it is destroyed. */
    void handle(const std::string &name, Handler handler) {
        if (!handler) throw Error(TW_ERR_INVALID, "tw_handler_register", "empty handler");
        auto owned = std::make_unique<Handler>(std::move(handler));
        detail::check(tw_handler_register(wheel_, name.c_str(), &Wheel::dispatch, owned.get()),
                      "tw_handler_register");
        handlers_.push_back(std::move(owned));
    }

    /* Opens the store: restores, delivers every unacknowledged fire again, then journals.
     * Error(TW_ERR_NO_HANDLER or TW_ERR_STORE) says what with tw_durable_error's message. */
    void durable_open() { durable_check(tw_durable_open(wheel_), "tw_durable_open"); }

    /* Adds the durable timer (key, name), first due at `first`, then every `period` (zero:
     * once). Error(TW_ERR_EXISTS) for a (key, name) that has one unless `replace`. */
    template <class Rep = std::int64_t, class Period = std::milli>
    void durable_add(std::uint64_t key, const std::string &name, const std::string &payload,
                     std::chrono::system_clock::time_point first,
                     std::chrono::duration<Rep, Period> period = std::chrono::milliseconds(0),
                     bool replace = false) {
        durable_check(tw_durable_add(wheel_, key, name.c_str(), payload.data(), payload.size(),
                                     detail::to_unix_ms(first), detail::to_ms(period),
                                     replace ? TW_DURABLE_REPLACE : 0u),
                      "tw_durable_add");
    }

    /* Moves the next deadline of (key, name); Error(TW_ERR_NOT_FOUND) if there is none. */
    void durable_reset(std::uint64_t key, const std::string &name,
                       std::chrono::system_clock::time_point when) {
        durable_check(tw_durable_reset(wheel_, key, name.c_str(), detail::to_unix_ms(when)),
                      "tw_durable_reset");
    }

    /* Removes (key, name); Error(TW_ERR_NOT_FOUND) if there is none. */
    void durable_delete(std::uint64_t key, const std::string &name) {
        durable_check(tw_durable_delete(wheel_, key, name.c_str()), "tw_durable_delete");
    }

    /* Acknowledges fires, many per call; returns how many matched an unacknowledged fire. */
    std::size_t durable_ack(const std::vector<Token> &tokens) {
        std::vector<tw_token> raw;
        raw.reserve(tokens.size());
        for (const Token &t : tokens)
            raw.push_back(tw_token{t.key, t.name.c_str(), detail::to_unix_ms(t.occurrence), t.epoch});
        std::size_t acked = 0;
        durable_check(tw_durable_ack(wheel_, raw.data(), raw.size(), &acked), "tw_durable_ack");
        return acked;
    }

    /* Commits everything queued; returns the durable sequence number. */
    std::uint64_t durable_flush() {
        std::uint64_t seq = 0;
        durable_check(tw_durable_flush(wheel_, &seq), "tw_durable_flush");
        return seq;
    }

    /* Commits the changes up to the sequence `seq`, not those queued after it; returns the
     * durable sequence (tw_durable_flush_to). */
    std::uint64_t durable_flush_to(std::uint64_t seq) {
        std::uint64_t durable = 0;
        durable_check(tw_durable_flush_to(wheel_, seq, &durable), "tw_durable_flush_to");
        return durable;
    }

    /* The counters of the durable store (tw_durable_get_stats). */
    tw_durable_stats durable_stats() const {
        tw_durable_stats stats{};
        stats.size = sizeof stats;
        durable_check(tw_durable_get_stats(wheel_, &stats), "tw_durable_get_stats");
        return stats;
    }

    /* Runs `f` once, `delay` from now. */
    template <class Rep, class Period, class F>
    Timer after(std::chrono::duration<Rep, Period> delay, F &&f) {
        std::uint64_t ms = detail::to_ms(delay);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_add(wheel_, ms, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_add"));
    }

    /* Runs `f` every `period`, the first time after `period`. */
    template <class Rep, class Period, class F>
    Timer every(std::chrono::duration<Rep, Period> period, F &&f,
                tw_period_mode mode = TW_FIXED_RATE) {
        return every(period, period, std::forward<F>(f), mode);
    }

    /* Runs `f` every `period`, the first time after `first`. */
    template <class Rep1, class Period1, class Rep2, class Period2, class F>
    Timer every(std::chrono::duration<Rep1, Period1> first,
                std::chrono::duration<Rep2, Period2> period, F &&f,
                tw_period_mode mode = TW_FIXED_RATE) {
        std::uint64_t first_ms = detail::to_ms(first), period_ms = detail::to_ms(period);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_add_periodic(wheel_, first_ms, period_ms, mode, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_add_periodic"));
    }

    /* Runs `f` on the schedule first, first + period, ... of the wheel's wall clock: a
     * timer re-created after a restart in phase with the one exported before it. For the
     * points that passed before the add, `missed` says: one run now (TW_MISSED_RUN_ONCE)
     * or none (TW_MISSED_SKIP); see tw_add_periodic_at. */
    template <class Rep, class Period, class F>
    Timer every_from(std::chrono::system_clock::time_point first,
                     std::chrono::duration<Rep, Period> period, F &&f,
                     tw_missed missed = TW_MISSED_RUN_ONCE, tw_period_mode mode = TW_FIXED_RATE) {
        std::int64_t first_ms = detail::to_unix_ms(first);
        std::uint64_t period_ms = detail::to_ms(period);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_add_periodic_at(wheel_, first_ms, period_ms, mode, missed, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_add_periodic_at"));
    }

    /* Runs `f` once at the wall-clock time `when`. */
    template <class F>
    Timer at(std::chrono::system_clock::time_point when, F &&f) {
        std::int64_t unix_ms = detail::to_unix_ms(when);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_add_at(wheel_, unix_ms, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_add_at"));
    }

    /* Cancels each of `timers` in one call (tw_delete_many): a status per timer, in order
     * (TW_ERR_NOT_FOUND for one no longer pending, of another wheel, or given twice). */
    std::vector<tw_status> cancel_many(const std::vector<Timer> &timers) {
        std::vector<tw_timer_id> ids = detail::ids_of(timers);
        std::vector<tw_status> statuses(ids.size());
        detail::check(tw_delete_many(wheel_, ids.data(), ids.size(), statuses.data()),
                      "tw_delete_many");
        return statuses;
    }

    /* Re-arms each of `timers` to fire `delays[i]` from now in one call (tw_reset_many): a
     * status per timer, in order. Throws Error(TW_ERR_INVALID) when the sizes differ. */
    template <class Rep, class Period>
    std::vector<tw_status> reset_many(const std::vector<Timer> &timers,
                                      const std::vector<std::chrono::duration<Rep, Period>> &delays) {
        if (delays.size() != timers.size()) throw Error(TW_ERR_INVALID, "reset_many: sizes differ");
        std::vector<tw_timer_id> ids = detail::ids_of(timers);
        std::vector<std::uint64_t> delays_ms;
        delays_ms.reserve(delays.size());
        for (auto delay : delays) delays_ms.push_back(detail::to_ms(delay));
        std::vector<tw_status> statuses(ids.size());
        detail::check(tw_reset_many(wheel_, ids.data(), delays_ms.data(), ids.size(),
                                    statuses.data()),
                      "tw_reset_many");
        return statuses;
    }

    /* The counters since the wheel started (docs/metrics.md). */
    tw_stats stats() const {
        tw_stats s{};
        s.size = sizeof s;
        detail::check(tw_get_stats(wheel_, &s), "tw_get_stats");
        return s;
    }

    /* The counters of the last `window` (1 s to 60 s; std::invalid_argument otherwise). */
    tw_stats stats_recent(std::chrono::milliseconds window) const {
        if (window < std::chrono::seconds(1) || window > std::chrono::seconds(60))
            throw std::invalid_argument("stats_recent: the window is 1 s to 60 s");
        tw_stats s{};
        s.size = sizeof s;
        detail::check(tw_get_stats_recent(wheel_, static_cast<std::uint64_t>(window.count()), &s),
                      "tw_get_stats_recent");
        return s;
    }

    /* The Prometheus text exposition of the wheel's metrics (tw_metrics_text). */
    std::string metrics_text() const {
        std::string text(8192, '\0');
        for (;;) {
            std::size_t needed = 0;
            tw_status s = tw_metrics_text(wheel_, text.data(), text.size(), &needed);
            if (s == TW_OK) {
                text.resize(needed - 1);
                return text;
            }
            if (s != TW_ERR_TOO_SMALL) detail::check(s, "tw_metrics_text");
            text.resize(needed + 1024);  // the text grows as the wheel runs
        }
    }

    /* Manual wheel: time until the next deadline, none when nothing is pending. */
    std::optional<std::chrono::milliseconds> next_timeout() const noexcept {
        std::int64_t ms = tw_next_timeout_ms(wheel_);
        if (ms < 0) return std::nullopt;
        return std::chrono::milliseconds(ms);
    }

    /* Manual wheel: runs the due callbacks here; returns how many ran. */
    std::size_t poll() {
        std::size_t ran = 0;
        detail::check(tw_poll(wheel_, &ran), "tw_poll");
        return ran;
    }

    /* The pending timers of one instant (tw_export): the wheel pauses only while they are
     * copied. Called from the wheel's own callbacks it works as from any thread. */
    Export export_timers() {
        detail::Exporting e;
        detail::check(tw_export(wheel_, &detail::Exporting::one, &e, &e.result.running),
                      "tw_export");
        if (e.out_of_memory) throw std::bad_alloc();
        return std::move(e.result);
    }

    /* Virtual clock: moves time forward by `by`, running here every callback due on the
     * way, in deadline order; returns how many ran. */
    template <class Rep, class Period>
    std::size_t advance(std::chrono::duration<Rep, Period> by) {
        std::size_t ran = 0;
        detail::check(tw_advance(wheel_, detail::to_ms(by), &ran), "tw_advance");
        return ran;
    }

    /* Virtual clock: moves time to the next deadline and runs what is due there; returns
     * how many ran (0, the clock unmoved, when nothing is pending). */
    std::size_t advance_to_next() {
        std::size_t ran = 0;
        detail::check(tw_advance_to_next(wheel_, &ran), "tw_advance_to_next");
        return ran;
    }

    /* The wheel's wall clock (tw_now_ms): the virtual clock's time, or the system clock. */
    std::chrono::system_clock::time_point now() const noexcept {
        return detail::from_unix_ms(tw_now_ms(wheel_));
    }

    tw_wheel *get() const noexcept { return wheel_; }

private:
    explicit Wheel(tw_wheel *wheel) noexcept : wheel_(wheel) {}

    static std::int32_t dispatch(const tw_token *raw, const void *payload, std::size_t len,
                                 void *ctx) noexcept {
        try {
            Token token{raw->key, raw->name, detail::from_unix_ms(raw->occurrence_unix_ms),
                        raw->epoch};
            std::string bytes(static_cast<const char *>(payload), len);
            return static_cast<std::int32_t>((*static_cast<Handler *>(ctx))(token, bytes));
        } catch (...) {
            return TW_ACK_LATER;
        }
    }

    /* Throws for a failure, with tw_durable_error's message when the store has one. */
    void durable_check(tw_status status, const char *call) const {
        detail::check_explained(status, call, [this](char *buf, std::size_t len, std::size_t *needed) {
            return tw_durable_error(wheel_, buf, len, needed);
        });
    }

    void reset_handle() noexcept {
        // TW_ERR_BUSY from inside the wheel (and for the shared wheel, which both refuse).
        if (wheel_ != nullptr && tw_destroy(wheel_) == TW_ERR_BUSY) {
            tw_destroy_nowait(wheel_);
            // Handlers may still run, here up the stack or on other workers, until the
            // wheel is freed, which no one hears of: they are kept for the process.
            if (!handlers_.empty()) detail::keep_for_the_process(std::move(handlers_));
        }
        wheel_ = nullptr;
        handlers_.clear();
    }

    tw_wheel *wheel_ = nullptr;
    /* The durable handlers, at stable addresses; destroyed after the wheel. */
    std::vector<std::unique_ptr<Handler>> handlers_;
};

/* A group of timers (docs/contract.md, "Timer groups"), owned: non-copyable, movable. The
 * destructor deletes the group (tw_group_delete): every timer in it is deleted, those
 * running finish, and the group ends after their drops; close() lets them run on instead.
 * `on_end`, if given, runs once when the group has ended: after it was deleted or closed
 * and the drop of its last timer (each timer's callable freed). It runs as the group's
 * drop function, where nothing can be counted (c.md): an exception from it is caught and
 * goes no further. Must not outlive its Wheel. */
class Group {
public:
    explicit Group(Wheel &wheel) : Group(wheel, nullptr) {}

    template <class F>
    Group(Wheel &wheel, F &&on_end) : wheel_(wheel.get()) {
        if constexpr (std::is_null_pointer_v<std::decay_t<F>>) {
            detail::check(tw_group_create(wheel_, nullptr, nullptr, &id_), "tw_group_create");
        } else {
            using Fn = std::decay_t<F>;
            static_assert(std::is_invocable_v<Fn &>, "a group's on_end takes no arguments");
            auto callable = std::make_unique<Fn>(std::forward<F>(on_end));
            detail::check(tw_group_create(wheel_, callable.get(), &ended<Fn>, &id_),
                          "tw_group_create");
            callable.release();  // the group owns it now
        }
    }

    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;
    Group(Group &&other) noexcept
        : wheel_(std::exchange(other.wheel_, nullptr)),
          id_(std::exchange(other.id_, 0)),
          owned_(std::exchange(other.owned_, false)) {}
    Group &operator=(Group &&other) noexcept {
        if (this != &other) {
            cancel();
            wheel_ = std::exchange(other.wheel_, nullptr);
            id_ = std::exchange(other.id_, 0);
            owned_ = std::exchange(other.owned_, false);
        }
        return *this;
    }

    /* Deletes the group and every timer in it. */
    ~Group() { cancel(); }

    tw_group_id id() const noexcept { return id_; }

    /* Deletes every timer of the group now and lets go of it (the destructor's work).
     * True if the group was still there. Adds are refused afterwards. */
    bool cancel() noexcept {
        return std::exchange(owned_, false) && tw_group_delete(wheel_, id_) == TW_OK;
    }

    /* Lets go of the group without deleting its timers (tw_group_close): they run on, and
     * the group ends after the last. Adds are refused afterwards (TW_ERR_GROUP_CLOSED, then
     * TW_ERR_NOT_FOUND). Throws if the group was closed by someone else. */
    void close() {
        if (std::exchange(owned_, false)) detail::check(tw_group_close(wheel_, id_), "tw_group_close");
    }

    /* Runs `f` once, `delay` from now, as a timer of the group. */
    template <class Rep, class Period, class F>
    Timer after(std::chrono::duration<Rep, Period> delay, F &&f) {
        std::uint64_t ms = detail::to_ms(delay);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_group_add(wheel_, id_, ms, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_group_add"));
    }

    /* Runs `f` every `period`, the first time after `period`, as a timer of the group. */
    template <class Rep, class Period, class F>
    Timer every(std::chrono::duration<Rep, Period> period, F &&f,
                tw_period_mode mode = TW_FIXED_RATE) {
        std::uint64_t ms = detail::to_ms(period);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_group_add_periodic(wheel_, id_, ms, ms, mode, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_group_add_periodic"));
    }

    /* Runs `f` once at the wall-clock time `when`, as a timer of the group. */
    template <class F>
    Timer at(std::chrono::system_clock::time_point when, F &&f) {
        std::int64_t unix_ms = detail::to_unix_ms(when);
        auto add = [&](tw_callback cb, void *data, tw_drop_fn drop, tw_timer_id *id) {
            return tw_group_add_at(wheel_, id_, unix_ms, cb, data, drop, id);
        };
        return Timer(wheel_, detail::add(std::forward<F>(f), add, "tw_group_add_at"));
    }

private:
    /* The group's drop: runs `on_end` once and frees it. */
    template <class F>
    static void ended(void *callable) noexcept {
        std::unique_ptr<F> f(static_cast<F *>(callable));
        try {
            (*f)();
        } catch (...) {
            // A drop function: tw_record_callback_failure would count nothing here.
        }
    }

    tw_wheel *wheel_ = nullptr;  // null once moved from
    tw_group_id id_ = 0;
    bool owned_ = true;  // false once deleted, closed or moved from
};

/* A fleet on PostgreSQL (docs/fleet.md; the library's feature `fleet`, on by default): the
 * node's settings, filled with the defaults (ttl_ms, window_ms, poll_ms, batch, listen,
 * buffer, missed_points); change the fields you need. */
struct FleetSettings : tw_fleet_settings {
    FleetSettings() noexcept : tw_fleet_settings() { tw_fleet_settings_init(this); }

    /* What becomes of the points of a periodic timer that fell due while no node held its
     * shard: TW_MISSED_EACH (the default) or TW_MISSED_COALESCE (docs/contract.md, "Fleet
     * store"). */
    FleetSettings &missed(tw_missed_points policy) noexcept {
        missed_points = static_cast<std::uint64_t>(policy);
        return *this;
    }
};

/* A fire of a fleet timer: store it with the fire's effect, then Fleet::ack it. A fire
 * delivered again by the shard's next owner has the same key, name, occurrence and
 * version under a greater epoch. */
struct FleetToken {
    std::uint64_t key = 0;
    std::string name;
    std::chrono::system_clock::time_point occurrence; /* the scheduled deadline (ms) */
    std::int64_t version = 0;
    std::int32_t shard = 0;
    std::int64_t epoch = 0; /* the shard's epoch when delivered */

    bool operator==(const FleetToken &o) const {
        return key == o.key && name == o.name && occurrence == o.occurrence &&
               version == o.version && shard == o.shard && epoch == o.epoch;
    }
};

/* A fleet timer's handler, on one of the node's threads: the fire's token and the timer's
 * payload. An exception from it cannot unwind into C: it is swallowed and the fire stays
 * unacknowledged. */
using FleetHandler = std::function<Ack(const FleetToken &, const std::string &payload)>;

/* A node of a fleet, owned: non-copyable, movable. Register handlers, join, then add,
 * reset, remove and ack timers; the destructor leaves the fleet (handing its shards over)
 * and frees the node. A change returns true once committed and false once kept in the
 * node's buffer because PostgreSQL did not answer (written when it answers); every other
 * failure throws an Error with tw_fleet_error's message (never the connection string). */
class Fleet {
public:
    explicit Fleet(const FleetSettings &settings = FleetSettings()) {
        detail::check(tw_fleet_create(&settings, &fleet_), "tw_fleet_create");
    }
    /* Leaves if it joined and frees the node, dropping buffered changes it cannot write
     * (leave() first keeps them: it throws instead). */
    ~Fleet() {
        if (fleet_ != nullptr) tw_fleet_destroy(fleet_);
    }
    Fleet(const Fleet &) = delete;
    Fleet &operator=(const Fleet &) = delete;
    Fleet(Fleet &&o) noexcept
        : fleet_(std::exchange(o.fleet_, nullptr)), handlers_(std::move(o.handlers_)) {}
    Fleet &operator=(Fleet &&o) noexcept {
        if (this != &o) {
            if (fleet_ != nullptr) tw_fleet_destroy(fleet_);
            fleet_ = std::exchange(o.fleet_, nullptr);
            handlers_ = std::move(o.handlers_);
        }
        return *this;
    }

    /* Registers `handler` for the timers named `name`, before join. */
    void handle(const std::string &name, FleetHandler handler) {
        if (!handler) throw Error(TW_ERR_INVALID, "tw_fleet_handler_register", "empty handler");
        auto owned = std::make_unique<FleetHandler>(std::move(handler));
        check(tw_fleet_handler_register(fleet_, name.c_str(), &Fleet::dispatch, owned.get()),
              "tw_fleet_handler_register");
        handlers_.push_back(std::move(owned));
    }

    /* Joins the fleet at `conninfo` (a libpq connection string) as `node_name`. */
    void join(const std::string &conninfo, const std::string &node_name) {
        check(tw_fleet_join(fleet_, conninfo.c_str(), node_name.c_str()), "tw_fleet_join");
    }

    /* Adds the timer (key, name), first due at `first`, then every `period` (zero: once). */
    template <class Rep = std::int64_t, class Period = std::milli>
    bool add(std::uint64_t key, const std::string &name, const std::string &payload,
             std::chrono::system_clock::time_point first,
             std::chrono::duration<Rep, Period> period = std::chrono::milliseconds(0),
             bool replace = false) {
        return written(tw_fleet_add(fleet_, key, name.c_str(), payload.data(), payload.size(),
                                    detail::to_unix_ms(first), detail::to_ms(period),
                                    replace ? TW_DURABLE_REPLACE : 0u),
                       "tw_fleet_add");
    }

    /* Moves the next deadline of (key, name); Error(TW_ERR_NOT_FOUND) if there is none. */
    bool reset(std::uint64_t key, const std::string &name, std::chrono::system_clock::time_point when) {
        return written(tw_fleet_reset(fleet_, key, name.c_str(), detail::to_unix_ms(when)),
                       "tw_fleet_reset");
    }

    /* Removes (key, name); Error(TW_ERR_NOT_FOUND) if there is none. */
    bool remove(std::uint64_t key, const std::string &name) {
        return written(tw_fleet_delete(fleet_, key, name.c_str()), "tw_fleet_delete");
    }

    /* Acknowledges fires, many per call; returns how many matched an unacknowledged fire.
     * Error(TW_ERR_FENCED) when a token's shard moved past its epoch (the other shards'
     * tokens are acknowledged). */
    std::size_t ack(const std::vector<FleetToken> &tokens) {
        std::vector<tw_fleet_token> raw;
        raw.reserve(tokens.size());
        for (const FleetToken &t : tokens)
            raw.push_back(tw_fleet_token{t.key, t.name.c_str(), detail::to_unix_ms(t.occurrence),
                                         t.version, t.shard, t.epoch});
        std::size_t acked = 0;
        check(tw_fleet_ack(fleet_, raw.data(), raw.size(), &acked), "tw_fleet_ack");
        return acked;
    }

    /* Writes the buffered changes; Error(TW_ERR_UNREACHABLE) while PostgreSQL does not
     * answer. */
    void flush() { check(tw_fleet_flush(fleet_, nullptr), "tw_fleet_flush"); }

    /* Writes what is buffered, stops firing and hands every shard back at once;
     * Error(TW_ERR_UNREACHABLE) while PostgreSQL does not answer and changes wait (the node
     * stays), Error(TW_ERR_BUSY) from one of its handlers. */
    void leave() { check(tw_fleet_leave(fleet_), "tw_fleet_leave"); }

    /* The C handle (null once moved from). */
    tw_fleet *get() const noexcept { return fleet_; }

private:
    static std::int32_t dispatch(const tw_fleet_token *raw, const void *payload, std::size_t len,
                                 void *ctx) noexcept {
        try {
            FleetToken token{raw->key,     raw->name,  detail::from_unix_ms(raw->occurrence_unix_ms),
                             raw->version, raw->shard, raw->epoch};
            std::string bytes(static_cast<const char *>(payload), len);
            return static_cast<std::int32_t>((*static_cast<FleetHandler *>(ctx))(token, bytes));
        } catch (...) {
            return TW_ACK_LATER;
        }
    }

    /* True once written, false once buffered; throws for the rest. */
    bool written(tw_status status, const char *call) const {
        if (status == TW_ERR_UNREACHABLE) return false;
        check(status, call);
        return true;
    }

    /* Throws for a failure, with tw_fleet_error's message when the node has one. */
    void check(tw_status status, const char *call) const {
        detail::check_explained(status, call, [this](char *buf, std::size_t len, std::size_t *needed) {
            return tw_fleet_error(fleet_, buf, len, needed);
        });
    }

    tw_fleet *fleet_ = nullptr;
    /* The handlers, at stable addresses; destroyed after the node. */
    std::vector<std::unique_ptr<FleetHandler>> handlers_;
};

}  // namespace timerwheel

#endif
