<?php
// db.php: Laravel 8's own database queue driver on PostgreSQL (Debian's php-laravel-framework and
// php-pgsql), with its Redis driver beside it, for the database part of
// tests/integration/laravel.sh: the tables by Laravel's own schema builder as its migrations
// (queue:table, queue:failed-table) make them, Queue::push on either connection, Laravel's own
// Illuminate\Queue\Worker, and failed jobs written by Laravel's own failer
// (DatabaseUuidFailedJobProvider, Laravel 8's default) on JobFailed, as artisan queue:work does.
//   php db.php setup                     the jobs and failed_jobs tables
//   php db.php scene                     setup, then laravel.sh's scene in one process: FailJobs
//                                        o1 o2 o3 (database) and r1 (redis) on billing, run to
//                                        failed_jobs; a HeldJob on mail (database) and on slow.
//                                        A HeldJob runs until LARAVEL_DIR/release (<= 60 s); a
//                                        FailJob (one try) throws until LARAVEL_DIR/fixed exists,
//                                        then appends its order to LARAVEL_DIR/ran
//   php db.php work CONN QUEUE NAME      Worker::daemon, as artisan queue:work --tries=1
//   php db.php drain CONN QUEUE          Worker::runNextJob until the queue is empty
// Environment: PGPORT, PGDATABASE, PGUSER (trust on loopback), REDIS_PORT, REDIS_PASSWORD,
// RETRY_AFTER (seconds), LARAVEL_DIR.
require_once 'Illuminate/autoload.php';
require_once 'Illuminate/Queue/autoload.php';
require_once 'Illuminate/Redis/autoload.php';
require_once 'Illuminate/Bus/autoload.php';
require_once 'Illuminate/Events/autoload.php';
require_once 'Illuminate/Database/autoload.php';

use Illuminate\Bus\Queueable;
use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Database\Capsule\Manager as DB;
use Illuminate\Queue\Capsule\Manager as Queue;
use Illuminate\Queue\Events\JobFailed;
use Illuminate\Queue\Failed\DatabaseUuidFailedJobProvider;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Worker;
use Illuminate\Queue\WorkerOptions;
use Illuminate\Redis\RedisManager;

class HeldJob implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public $tries = 0; // no limit: a lease run out hands it to the other worker, not to failed_jobs

    public function handle()
    {
        $dir = getenv('LARAVEL_DIR');
        $n = $this->attempts();
        touch("$dir/held.$n");
        for ($i = 0; $i < 1200 && !file_exists("$dir/release"); $i++) {
            usleep(50000);
        }
    }
}

class FailJob implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public $tries = 1;
    protected $orderId;

    public function __construct($orderId)
    {
        $this->orderId = $orderId;
    }

    public function handle()
    {
        $dir = getenv('LARAVEL_DIR');
        // fails until LARAVEL_DIR/fixed exists (the bug fixed, the replay runs)
        if (!file_exists("$dir/fixed")) {
            throw new RuntimeException("order {$this->orderId} failed");
        }
        file_put_contents("$dir/ran", "{$this->orderId}\n", FILE_APPEND | LOCK_EX);
    }
}

class Exceptions implements Illuminate\Contracts\Debug\ExceptionHandler
{
    public function report(Throwable $e) {}
    public function shouldReport(Throwable $e) { return false; }
    public function render($request, Throwable $e) { return null; }
    public function renderForConsole($output, Throwable $e) {}
}

$app = new Container();
Container::setInstance($app);
$app->instance(Illuminate\Contracts\Container\Container::class, $app);
$events = new Illuminate\Events\Dispatcher($app);
$app->instance('events', $events);
$app->instance(Illuminate\Contracts\Events\Dispatcher::class, $events);
$app->singleton(Illuminate\Contracts\Bus\Dispatcher::class, function ($app) {
    return new Illuminate\Bus\Dispatcher($app);
});
$db = new DB($app);
$db->addConnection(['driver' => 'pgsql', 'host' => '127.0.0.1', 'port' => getenv('PGPORT'),
                    'database' => getenv('PGDATABASE'), 'username' => getenv('PGUSER'),
                    'password' => '', 'charset' => 'utf8', 'prefix' => '', 'schema' => 'public']);
$db->setAsGlobal();
$app->instance('db', $db->getDatabaseManager());
$app->instance('redis', new RedisManager($app, 'phpredis', [
    'options' => ['prefix' => 'laravel_database_'],
    'default' => ['host' => '127.0.0.1', 'port' => (int) getenv('REDIS_PORT'),
                  'password' => getenv('REDIS_PASSWORD'), 'database' => 0],
]));
$queue = new Queue($app);
$retry = (int) getenv('RETRY_AFTER');
$queue->addConnection(['driver' => 'database', 'table' => 'jobs', 'queue' => 'default',
                       'retry_after' => $retry], 'database');
$queue->addConnection(['driver' => 'redis', 'connection' => 'default', 'queue' => 'default',
                       'retry_after' => $retry], 'redis');
$queue->getQueueManager()->setDefaultDriver('database');
$queue->setAsGlobal();
// Laravel 8's default failer (config/queue.php failed.driver database-uuids), logged on JobFailed
// as artisan queue:work's logFailedJob does.
$failer = new DatabaseUuidFailedJobProvider($db->getDatabaseManager(), 'default', 'failed_jobs');
$events->listen(JobFailed::class, function ($event) use ($failer) {
    $failer->log($event->connectionName, $event->job->getQueue(), $event->job->getRawBody(),
                 $event->exception);
});

$cmd = $argv[1];
if ($cmd === 'setup' || $cmd === 'scene') {
    // the columns of Laravel 8's queue:table and queue:failed-table migrations
    $schema = DB::schema();
    $schema->create('jobs', function ($t) {
        $t->bigIncrements('id');
        $t->string('queue')->index();
        $t->longText('payload');
        $t->unsignedTinyInteger('attempts');
        $t->unsignedInteger('reserved_at')->nullable();
        $t->unsignedInteger('available_at');
        $t->unsignedInteger('created_at');
    });
    $schema->create('failed_jobs', function ($t) {
        $t->id();
        $t->string('uuid')->unique();
        $t->text('connection');
        $t->text('queue');
        $t->longText('payload');
        $t->longText('exception');
        $t->timestamp('failed_at')->useCurrent();
    });
    if ($cmd === 'setup') {
        exit(0);
    }
}
$worker = new Worker($queue->getQueueManager(), $events, new Exceptions(), function () {
    return false;
});
// queue:work --sleep=0.1 --tries=1 --timeout=60
$options = new WorkerOptions('w', 0, 128, 60, 0.1, 1);
function drain($worker, $options, $conn, $q)
{
    while (Queue::connection($conn)->size($q) > 0) {
        $worker->runNextJob($conn, $q, $options);
    }
}
if ($cmd === 'scene') {
    foreach (['o1', 'o2', 'o3'] as $o) {
        Queue::connection('database')->push(new FailJob($o), '', 'billing');
    }
    Queue::connection('redis')->push(new FailJob('r1'), '', 'billing');
    drain($worker, $options, 'database', 'billing');
    drain($worker, $options, 'redis', 'billing');
    Queue::connection('database')->push(new HeldJob(), '', 'mail');
    Queue::connection('database')->push(new HeldJob(), '', 'slow');
    exit(0);
}
[, , $conn, $q] = $argv;
switch ($cmd) {
case 'work':
    $worker->setName($argv[4]);
    $worker->daemon($conn, $q, $options);
    break;
case 'drain':
    drain($worker, $options, $conn, $q);
    break;
default:
    fwrite(STDERR, "usage: db.php setup|scene|work|drain ...\n");
    exit(2);
}
