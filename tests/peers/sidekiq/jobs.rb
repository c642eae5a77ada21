# jobs.rb: Sidekiq jobs and a client for tests/integration/sidekiq.sh, using Sidekiq itself
# (Debian's ruby-sidekiq) the way applications do: the test runs `sidekiq -r ./jobs.rb` as the
# worker process and `ruby jobs.rb CMD...` as the client.
#   ruby jobs.rb push QUEUE CLASS [ARG]   enqueue a job (CLASS.set(queue:).perform_async)
#   ruby jobs.rb push_in SECONDS QUEUE CLASS   (perform_in)
#   ruby jobs.rb spread PREFIX N          one OkJob in each of the queues PREFIX1..PREFIXN
#   ruby jobs.rb processes QUEUE SECONDS  Sidekiq's own processes (Sidekiq::ProcessSet, as its
#                                         Busy page lists them) that fetch from QUEUE, are not
#                                         quiet and beat within SECONDS; then how many it lists
#                                         for QUEUE at all: "serving=N listed=M"
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.configure_server { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

class HangJob
  include Sidekiq::Worker
  def perform(seconds)
    sleep seconds.to_f
  end
end

class OkJob
  include Sidekiq::Worker
  def perform; end
end

# Given up at once: straight to the dead set.
class DeadJob
  include Sidekiq::Worker
  sidekiq_options retry: 0
  def perform
    raise "the provider said no"
  end
end

# Failed once, retried an hour later: waits in the retry set.
class RetryJob
  include Sidekiq::Worker
  sidekiq_options retry: 3
  sidekiq_retry_in { |_count, _exc| 3600 }
  def perform
    raise "try again later"
  end
end

if $PROGRAM_NAME == __FILE__
  cmd, *args = ARGV
  case cmd
  when "push"
    Object.const_get(args[1]).set(queue: args[0]).perform_async(*args[2..])
  when "spread"
    (1..args[1].to_i).each { |i| OkJob.set(queue: "#{args[0]}#{i}").perform_async }
  when "push_in"
    Object.const_get(args[2]).set(queue: args[1]).perform_in(args[0].to_f)
  when "processes"
    queue, fresh = args[0], args[1].to_f
    mine = Sidekiq::ProcessSet.new.select { |p| p["queues"].include?(queue) }
    serving = mine.count { |p| p["quiet"] != "true" && Time.now.to_f - p["beat"] <= fresh }
    puts "serving=#{serving} listed=#{mine.size}"
  else
    abort "jobs.rb: unknown command #{cmd}"
  end
end
