"""A person's edits of a session's history over OpenCode's routes: DELETE of a message
(`/session/{id}/message/{messageID}`, its GET is views_session's), DELETE and PATCH of a part. A busy
session answers OpenCode's 409 SessionBusyError; a missing message or part, or a foreign session, a 404."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hangar.conversations.edit_services import (
    PartEditRefused,
    SessionBusyError,
    message_remove,
    part_edit,
    part_remove,
)
from hangar.conversations.models import Message, Part
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import SessionBusy

OC = ["opencode"]


def remove_message(view: OpenCodeView, session_id: str, message_id: str) -> Response:
    session = view.get_session(session_id)
    try:
        message_remove(actor=view.scope.actor, session=session, message_id=message_id)
    except Message.DoesNotExist:
        raise NotFound(f"Message not found: {message_id}") from None
    except SessionBusyError:
        raise SessionBusy(session.pk) from None
    return Response(True)


class MessagePart(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_part_delete", responses={200: bool})
    def delete(self, request, project_id, session_id, message_id, part_id):
        session = self.get_session(session_id)
        try:
            part_remove(actor=self.scope.actor, session=session, message_id=message_id, part_id=part_id)
        except Part.DoesNotExist:
            raise NotFound(f"Part not found: {part_id}") from None
        except SessionBusyError:
            raise SessionBusy(session.pk) from None
        return Response(True)

    @extend_schema(tags=OC, operation_id="oc_part_update", request=dict, responses={200: dict})
    def patch(self, request, project_id, session_id, message_id, part_id):
        session = self.get_session(session_id)
        if not isinstance(request.data, dict):
            raise ValidationError({"body": ["A Part object."]})
        try:
            part = part_edit(
                actor=self.scope.actor,
                session=session,
                message_id=message_id,
                part_id=part_id,
                body=dict(request.data),
            )
        except Part.DoesNotExist:
            raise NotFound(f"Part not found: {part_id}") from None
        except SessionBusyError:
            raise SessionBusy(session.pk) from None
        except PartEditRefused as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response(part)
