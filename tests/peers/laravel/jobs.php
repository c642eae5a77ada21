<?php
// jobs.php: Laravel 8's own queue on its Redis driver, for tests/integration/laravel.sh, from
// Debian's php-laravel-framework and php-redis: a container with the queue and Redis managers
// and the bus (what an app's service providers register), no full application.
//   php jobs.php push QUEUE [TIMEOUT]  Queue::push of a SlowJob (its $timeout when given)
//   php jobs.php later QUEUE SECONDS    Queue::later of a SlowJob
//   php jobs.php spread STEM N          one SlowJob on each of the queues STEM1 .. STEMN
//   php jobs.php bulk STEM N DEPTH      Queue::bulk of DEPTH SlowJobs on each of the queues STEM0 ..
//                                       STEM(N-1) (bench/job_queues.sh: RedisQueue's bulk sends a
//                                       queue's pushes as one pipelined transaction)
//   php jobs.php work QUEUE NAME        Illuminate\Queue\Worker::daemon, as artisan queue:work
// Environment: REDIS_PORT, REDIS_PASSWORD, RETRY_AFTER (seconds), LARAVEL_DIR (the files the jobs
// write: started.N when attempt N begins, done.N when it ends; a job runs until LARAVEL_DIR/release
// exists, at most 60 s, so a test holds it as long as it needs, without timing it).
require_once 'Illuminate/autoload.php';
require_once 'Illuminate/Queue/autoload.php';
require_once 'Illuminate/Redis/autoload.php';
require_once 'Illuminate/Bus/autoload.php';
require_once 'Illuminate/Events/autoload.php';

use Illuminate\Bus\Queueable;
use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Queue\Capsule\Manager as Queue;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Worker;
use Illuminate\Queue\WorkerOptions;
use Illuminate\Redis\RedisManager;

class SlowJob implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public $timeout;

    public function __construct($timeout = null)
    {
        $this->timeout = $timeout;
    }

    public function handle()
    {
        $dir = getenv('LARAVEL_DIR');
        $n = $this->attempts();
        touch("$dir/started.$n");
        for ($i = 0; $i < 1200 && !file_exists("$dir/release"); $i++) {
            usleep(50000);
        }
        touch("$dir/done.$n");
    }
}

class Exceptions implements Illuminate\Contracts\Debug\ExceptionHandler
{
    public function report(Throwable $e) { fwrite(STDERR, $e . "\n"); }
    public function shouldReport(Throwable $e) { return true; }
    public function render($request, Throwable $e) { return null; }
    public function renderForConsole($output, Throwable $e) { fwrite(STDERR, $e . "\n"); }
}

$app = new Container();
Container::setInstance($app);
$app->instance(Illuminate\Contracts\Container\Container::class, $app);
$app->instance('redis', new RedisManager($app, 'phpredis', [
    // Laravel's default key prefix (config/database.php: APP_NAME "laravel")
    'options' => ['prefix' => 'laravel_database_'],
    'default' => ['host' => '127.0.0.1', 'port' => (int) getenv('REDIS_PORT'),
                  'password' => getenv('REDIS_PASSWORD'), 'database' => 0],
]));
$events = new Illuminate\Events\Dispatcher($app);
$app->instance('events', $events);
$app->instance(Illuminate\Contracts\Events\Dispatcher::class, $events);
$app->singleton(Illuminate\Contracts\Bus\Dispatcher::class, function ($app) {
    return new Illuminate\Bus\Dispatcher($app);
});
$queue = new Queue($app);
$queue->addConnection(['driver' => 'redis', 'connection' => 'default', 'queue' => 'default',
                       'retry_after' => (int) getenv('RETRY_AFTER')]);
$queue->setAsGlobal();
// Recent Laravel (13.x) stamps every payload with createdAt; on 8 an application adds it so.
Illuminate\Queue\Queue::createPayloadUsing(function () { return ['createdAt' => time()]; });

[, $cmd, $q] = $argv;
switch ($cmd) {
case 'push':
    Queue::push(new SlowJob(isset($argv[3]) ? (int) $argv[3] : null), '', $q);
    break;
case 'later':
    Queue::later((int) $argv[3], new SlowJob(), '', $q);
    break;
case 'spread':
    for ($i = 1; $i <= (int) $argv[3]; $i++) {
        Queue::push(new SlowJob(), '', "$q$i");
    }
    break;
case 'bulk':
    $jobs = [];
    for ($i = 0; $i < (int) $argv[4]; $i++) {
        $jobs[] = new SlowJob();
    }
    for ($i = 0; $i < (int) $argv[3]; $i++) {
        Queue::bulk($jobs, '', "$q$i");
    }
    break;
case 'work':
    $worker = new Worker($queue->getQueueManager(), $events, new Exceptions(), function () {
        return false;
    });
    // queue:work --sleep=0.1 --tries=0 (no limit: the test counts the runs) --timeout=60
    $worker->setName($argv[3]);
    $worker->daemon('default', $q, new WorkerOptions($argv[3], 0, 128, 60, 0.1, 0));
    break;
default:
    fwrite(STDERR, "usage: jobs.php push|later|spread|bulk|work QUEUE ...\n");
    exit(2);
}
