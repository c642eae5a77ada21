# sqs.sh: AWS JSON 1.0 calls straight to the fauxqs emulator, for the tests that set up queues
# and workloads as an SQS application would (sourced, not run). FQ is fauxqs' port
# (start_fauxqs FQ); fauxqs checks no signature, so these calls are unsigned.
# shellcheck shell=bash

# sqs ACTION JSON: one AmazonSQS.ACTION call; prints the answer, fails on an HTTP error.
sqs() {
  curl -fsS -H 'Content-Type: application/x-amz-json-1.0' -H "X-Amz-Target: AmazonSQS.$1" \
    --data-binary "$2" "http://127.0.0.1:$FQ/"
}
create() { # create NAME ATTRIBUTES_JSON: prints the queue URL
  sqs CreateQueue "{\"QueueName\":\"$1\",\"Attributes\":$2}" | jq -r .QueueUrl
}
arn() { echo "arn:aws:sqs:us-east-1:000000000000:$1"; }
send() { sqs SendMessage "{\"QueueUrl\":\"$1\",\"MessageBody\":\"$2\"${3:+,$3}}" >/dev/null; }
receive() { # receive URL [extra JSON members]: prints how many messages came back
  sqs ReceiveMessage "{\"QueueUrl\":\"$1\",\"MaxNumberOfMessages\":10${2:+,$2}}" | jq '.Messages | length'
}
depth() { # depth URL ATTRIBUTE
  sqs GetQueueAttributes "{\"QueueUrl\":\"$1\",\"AttributeNames\":[\"All\"]}" | jq -r ".Attributes.$2"
}
policy() { # policy DLQ_NAME COUNT_JSON: a RedrivePolicy attribute value (a JSON string)
  jq -cn --arg arn "$(arn "$1")" --argjson n "$2" '{deadLetterTargetArn: $arn, maxReceiveCount: $n} | tojson'
}
