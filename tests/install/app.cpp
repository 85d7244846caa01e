// Built with CMake's find_package against an installed timerwheel (make test-install): the
// C++ wrapper header is installed beside the C header. One timer fires.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <timerwheel.hpp>

int main() {
    std::atomic<bool> fired{false};
    {
        timerwheel::Wheel wheel;
        timerwheel::Timer timer = wheel.after(std::chrono::milliseconds(5), [&] { fired = true; });
        for (int i = 0; i < 5000 && !fired; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    std::printf("app-cpp: timerwheel %s, timer %s\n", tw_version(), fired ? "fired" : "did not fire");
    return fired ? 0 : 1;
}
