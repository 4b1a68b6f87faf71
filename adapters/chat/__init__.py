"""The platform-neutral conversation: what every chat platform does alike, so a platform adapter only
translates its events and renders its card."""

from adapters.chat.replies import REPLY_TTL_SECONDS, PostedReply, shared_replies

__all__ = ["REPLY_TTL_SECONDS", "PostedReply", "shared_replies"]
