# drive.rb: puts a PostgreSQL database into a known delayed_job state through delayed_job itself
# (Debian's ruby-delayed-job 4.1.9 with ruby-delayed-job-active-record 4.1.6, Active Record 6.1
# and ruby-pg), for tests/integration/postgres_delayed_job.sh:
#   ruby drive.rb PORT READY_FILE GO_FILE
# The delayed_jobs table is made by the gem's own generator template (migration.rb, rendered as
# `rails generate delayed_job:active_record` renders it), jobs are enqueued with
# Delayed::Job.enqueue and run by Delayed::Worker#work_off, so every row is what delayed_job
# writes. The state, per queue:
#   mail     3 ready jobs, 2 scheduled an hour ahead (run_at)
#   billing  1 job failed for good and kept (its max_attempts 2, destroy_failed_jobs? false:
#            failed_at set), 1 retrying (failed once, rescheduled an hour ahead: attempts 1)
#   doomed   1 job failed once and due again, one failure from the end (max_attempts 2), that
#            delayed_job will destroy when it fails again (destroy_failed_jobs? true)
#   slow     1 job held by a worker thread whose handler does not return (locked_at, locked_by)
#   (none)   1 ready job enqueued without a queue (delayed_job's default_queue_name is nil)
#   fast     1 job held like slow's by a worker on a host whose clock runs 10 min fast: delayed_job
#            stamps locked_at with that clock (Delayed::Job.db_time_now), 10 min ahead of now()
# Then it writes READY_FILE (the slow job's locked_by). Once GO_FILE exists it runs the doomed
# job again, which fails for the last time and is destroyed, writes READY_FILE.2, and waits to be
# killed, keeping the slow job's lock.
require "erb"
require "logger"
require "active_record"
require "delayed_job"
require "delayed_job_active_record"

port, ready, go = ARGV
ActiveRecord::Base.establish_connection(adapter: "postgresql", host: "127.0.0.1", port: port.to_i,
                                        username: "postgres", database: "postgres")
ActiveRecord::Migration.verbose = false
Delayed::Worker.logger = Logger.new(nil)

# The generator's template, rendered with the migration version the generator would write.
gem_dir = Gem::Specification.find_by_name("delayed_job_active_record").gem_dir
template = File.join(gem_dir, "lib/generators/delayed_job/templates/migration.rb")
migration_version = "[#{ActiveRecord::Migration.current_version}]"
eval(ERB.new(File.read(template)).result(binding)) # rubocop:disable Security/Eval
CreateDelayedJobs.up
Delayed::Job.reset_column_information

class OkJob
  def perform; end
end

# Fails every time; delayed_job asks the job for its limits and whether to destroy it.
class FailJob
  attr_accessor :tries, :destroy, :later
  def initialize(tries, destroy, later)
    @tries = tries
    @destroy = destroy
    @later = later
  end

  def perform
    raise "the provider is down"
  end

  def max_attempts
    tries
  end

  def destroy_failed_jobs?
    destroy
  end

  # due again at once (so one work_off runs it to the end), or an hour later
  def reschedule_at(now, _attempts)
    later ? now + 3600 : now
  end
end

# Holds its worker until the process is killed: a job in flight.
class SlowJob
  def perform
    Thread.stop
  end
end

3.times { Delayed::Job.enqueue(OkJob.new, queue: "mail") }
2.times { Delayed::Job.enqueue(OkJob.new, queue: "mail", run_at: Time.now.utc + 3600) }
Delayed::Job.enqueue(FailJob.new(2, false, false), queue: "billing")
Delayed::Job.enqueue(FailJob.new(5, false, true), queue: "billing")
Delayed::Worker.new(queues: ["billing"]).work_off(10)
Delayed::Job.enqueue(FailJob.new(2, true, false), queue: "doomed")
Delayed::Worker.new(queues: ["doomed"]).work_off(1)

Delayed::Job.enqueue(OkJob.new)

Delayed::Job.enqueue(SlowJob.new, queue: "slow")
worker = Delayed::Worker.new(queues: ["slow"])
Thread.new { worker.work_off(1) }
loop do
  break if Delayed::Job.where(queue: "slow").where.not(locked_at: nil).exists?
  Thread.pass
end

# The fast host: delayed_job's own time source, moved 10 minutes ahead for the rest of the run.
Delayed::Job.singleton_class.prepend(Module.new { def db_time_now = super + 600 })
Delayed::Job.enqueue(SlowJob.new, queue: "fast")
Thread.new { Delayed::Worker.new(queues: ["fast"]).work_off(1) }
loop do
  break if Delayed::Job.where(queue: "fast").where.not(locked_at: nil).exists?
  Thread.pass
end

File.write(ready, worker.name)
sleep 0.05 until File.exist?(go)
Delayed::Worker.new(queues: ["doomed"]).work_off(1)
File.write("#{ready}.2", Delayed::Job.where(queue: "doomed").count.to_s)
sleep
