"""The platform-neutral conversation: what every chat platform does alike, so a platform adapter only
translates its events into `ChatFlows` calls and renders the `Answer` and `Card` they return."""

from adapters.chat.flows import (
    CARD_GONE_MESSAGE,
    NO_TEXT_MESSAGE,
    VOTE_FAILED_MESSAGE,
    Answer,
    AnswerView,
    ChatFlows,
    ChatState,
    Paste,
    Recover,
    Replier,
    Update,
    holder_of,
)
from adapters.chat.replies import REPLY_TTL_SECONDS, PostedReply, shared_replies
from adapters.redis_memory import RATE_LIMITED_MESSAGE

__all__ = [
    "CARD_GONE_MESSAGE",
    "NO_TEXT_MESSAGE",
    "RATE_LIMITED_MESSAGE",
    "REPLY_TTL_SECONDS",
    "VOTE_FAILED_MESSAGE",
    "Answer",
    "AnswerView",
    "ChatFlows",
    "ChatState",
    "Paste",
    "PostedReply",
    "Recover",
    "Replier",
    "Update",
    "holder_of",
    "shared_replies",
]
