// The live terminal view: when stdout is a terminal, a summary redrawn once a second -
// frame and message rates, forwarding and drop counters, workers, busiest QPs and their
// congestion signals - from the same LiveStats the telemetry commands read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dataplane/live/telemetry.hpp"

namespace insert::live {

class LiveView {
  public:
    LiveView(const LiveStats& stats, std::FILE* out);
    ~LiveView();
    void start();
    void stop();  // joins; leaves the last frame on the screen

    // One frame of the view as text (also used by tests).
    static std::string render(const LiveTotals& now, const LiveTotals& before, double dt_s,
                              const LiveStats& stats);

  private:
    void loop();
    const LiveStats& stats_;
    std::FILE* out_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
};

}  // namespace insert::live
