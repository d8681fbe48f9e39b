from channels.auth import AuthMiddlewareStack as WebSocketAuthMiddleware  # replaced by token+cookie auth
